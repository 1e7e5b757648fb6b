export type { ResolvedDestination, TenantRecord } from '@pipeline/tenancy';

export interface ResolveWriteKeyBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  writeKey: string;
}
