/**
 * Which consent group a destination kind needs (README, "Consent"): analytics for product
 * analytics and customer data, marketing for messaging, push and advertising. A group the
 * event does not mention counts as granted; only an explicit `false` withholds the event.
 * The warehouse (first-party storage) and webhooks have no gate.
 */
export const consentGroupFor: Record<string, 'analytics' | 'marketing' | null> = {
  product_analytics: 'analytics',
  customer_data: 'analytics',
  messaging: 'marketing',
  push: 'marketing',
  advertising: 'marketing',
  webhook: null,
  warehouse: null,
};

export function consentAllows(
  destinationKind: string,
  consent: Record<string, boolean> | undefined,
): boolean {
  const group = consentGroupFor[destinationKind] ?? null;
  return group === null || consent?.[group] !== false;
}
