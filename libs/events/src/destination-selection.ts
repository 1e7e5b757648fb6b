/**
 * Segment's destination names for our app types: what an event's `integrations` object may
 * call each one (docs/tracking-api.md, "Choosing destinations per event"). Our app type itself also works.
 * Names compare without case.
 */
export const segmentDestinationNames: Readonly<Record<string, readonly string[]>> = {
  amplitude: ['Amplitude', 'Actions Amplitude', 'Amplitude (Actions)'],
  mixpanel: ['Mixpanel', 'Actions Mixpanel', 'Mixpanel (Actions)'],
  braze: ['Braze', 'Appboy', 'Braze Cloud Mode (Actions)'],
  customer_io: ['Customer.io', 'Customerio', 'Customer.io (Actions)'],
  segment: ['Segment', 'Segment.io'],
  onesignal: ['OneSignal', 'OneSignal (Actions)'],
  hubspot: ['HubSpot', 'Hubspot', 'HubSpot Cloud Mode (Actions)'],
  meta_conversions: [
    'Facebook Conversions API',
    'Facebook Conversions API (Actions)',
    'Meta Conversions API',
  ],
  google_ads: ['Google Ads Conversions', 'Google AdWords New', 'Google Ads (Gtag)'],
  webhook: ['Webhooks', 'Webhook', 'Webhooks (Actions)'],
};

const lookup = new Map<string, string>();
for (const [appType, names] of Object.entries(segmentDestinationNames)) {
  for (const name of [appType, ...names]) lookup.set(name.toLowerCase(), appType);
}

/**
 * Whether an event's `integrations` object lets it go to this app type, as Segment reads it:
 * the destination's own entry decides (false: no; true or an options object: yes), else
 * `All` (default true). The warehouse is not a destination here: it stores every event.
 */
export function integrationAllows(appType: string, integrations: unknown): boolean {
  if (integrations === null || typeof integrations !== 'object' || Array.isArray(integrations)) return true;
  let all = true;
  let own: boolean | undefined;
  for (const [key, value] of Object.entries(integrations as Record<string, unknown>)) {
    const name = key.toLowerCase();
    if (name === 'all') all = value !== false;
    else if (lookup.get(name) === appType) own = value !== false;
  }
  return own ?? all;
}
