import { connectorHealthAudit } from './connector-health-audit';
import type { TaskTemplate } from './template';
import { trackingPlanAudit } from './tracking-plan-audit';
import { warehouseFreshnessCheck } from './warehouse-freshness-check';

/** The agent goals the service ships, by id. A change of behaviour bumps the template's version. */
export const templateCatalog: readonly TaskTemplate<never>[] = [
  connectorHealthAudit as TaskTemplate<never>,
  warehouseFreshnessCheck as TaskTemplate<never>,
  trackingPlanAudit as TaskTemplate<never>,
];

export function findTemplate(id: string): TaskTemplate<never> | undefined {
  return templateCatalog.find((t) => t.id === id);
}
