export type {
  BoundFunction,
  DestinationSummary,
  ResolvedDestination,
  TenantRecord,
  WriteKeyRecord,
} from '@pipeline/tenancy';

export interface ResolveWriteKeyBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  writeKey: string;
}

export interface LookupWriteKeyBody {
  /**
   * The id a write key's events carry in the outbox.
   * @minLength 1
   * @maxLength 64
   */
  writeKeyId: string;
}
