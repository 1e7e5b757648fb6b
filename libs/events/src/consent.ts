/**
 * What a forwarding destination does with events, which decides the consent group it needs.
 * The app catalog gives every destination app type one of these.
 */
export const destinationCategories = [
  'product_analytics',
  'customer_data',
  'messaging',
  'push',
  'advertising',
  'webhook',
] as const;

export type DestinationCategory = (typeof destinationCategories)[number];

export type ConsentGroup = 'analytics' | 'marketing';

/**
 * The consent group each category needs (docs/delivery-and-destinations.md, "Consent"):
 * analytics for product analytics and customer data, marketing for messaging, push and
 * advertising. The warehouse (first-party storage) and webhooks have no gate. The type lists
 * every category, so a new category without a decision here does not compile.
 */
export const consentGroupFor: { readonly [C in DestinationCategory | 'warehouse']: ConsentGroup | null } = {
  product_analytics: 'analytics',
  customer_data: 'analytics',
  messaging: 'marketing',
  push: 'marketing',
  advertising: 'marketing',
  webhook: null,
  warehouse: null,
};

/**
 * A group the event does not mention counts as granted; only an explicit `false` withholds the
 * event. A category this build does not know (a record written by a newer control plane)
 * withholds it: sending without knowing the gate could break a user's choice.
 */
export function consentAllows(
  category: DestinationCategory | 'warehouse',
  consent: Record<string, boolean> | undefined,
): boolean {
  if (!Object.hasOwn(consentGroupFor, category)) return false;
  const group = consentGroupFor[category];
  return group === null || consent?.[group] !== false;
}
