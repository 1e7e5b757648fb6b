import { appCatalog, consentGroupOf, rolesOf, type AnyAppType } from '@pipeline/catalog';
import type { AppTypeView, JsonSchema } from './app-type.dto';

/** A plain JSON copy: TypeBox marks its schemas with symbol keys, which are not part of the document. */
const plain = (schema: unknown): JsonSchema => JSON.parse(JSON.stringify(schema)) as JsonSchema;

/** The names of write-only fields, in every branch of a union. */
function secretFieldsOf(schema: JsonSchema): string[] {
  const branches = (schema.anyOf ?? schema.oneOf ?? [schema]) as JsonSchema[];
  const names = branches.flatMap((branch) =>
    Object.entries((branch.properties ?? {}) as Record<string, JsonSchema>)
      .filter(([, field]) => field.writeOnly === true)
      .map(([name]) => name),
  );
  return [...new Set(names)];
}

export function appTypeView(definition: AnyAppType): AppTypeView {
  const credentialsSchema = plain(definition.credentials);
  return {
    appType: definition.appType,
    name: definition.name,
    description: definition.description,
    roles: rolesOf(definition),
    category: definition.forwards?.category ?? null,
    consentGroup: consentGroupOf(definition),
    importTasks: (definition.imports?.streams ?? []).map(({ name, primaryKey, cursorField }) => ({
      name,
      primaryKey,
      cursorField,
    })),
    credentialsSchema,
    configSchema: plain(definition.config),
    secretFields: secretFieldsOf(credentialsSchema),
    baseUrlVariable: definition.vendorHost ? `VENDOR_BASE_URL_${definition.appType.toUpperCase()}` : null,
  };
}

export const appTypeViews = (): AppTypeView[] => appCatalog.map(appTypeView);
