import { amplitudeLookAlike } from '../vendors/amplitude/amplitude-look-alike';
import { brazeLookAlike } from '../vendors/braze/braze-look-alike';
import { customerIoLookAlike } from '../vendors/customer-io/customer-io-look-alike';
import { googleAdsLookAlike } from '../vendors/google-ads/google-ads-look-alike';
import { hubspotLookAlike } from '../vendors/hubspot/hubspot-look-alike';
import { metaConversionsLookAlike } from '../vendors/meta-conversions/meta-conversions-look-alike';
import { mixpanelLookAlike } from '../vendors/mixpanel/mixpanel-look-alike';
import { oneSignalLookAlike } from '../vendors/onesignal/onesignal-look-alike';
import { segmentLookAlike } from '../vendors/segment/segment-look-alike';
import { webhookLookAlike } from '../vendors/webhook/webhook-look-alike';

/**
 * Every vendor's look-alike, one per forwarding app type of the catalog (catalog.test.ts holds
 * the two lists equal). A new vendor's look-alike is one line here.
 */
export const lookAlikes = [
  amplitudeLookAlike,
  mixpanelLookAlike,
  brazeLookAlike,
  customerIoLookAlike,
  segmentLookAlike,
  oneSignalLookAlike,
  webhookLookAlike,
  hubspotLookAlike,
  metaConversionsLookAlike,
  googleAdsLookAlike,
] as const;

export type LookAlikeVendor = (typeof lookAlikes)[number]['vendor'];
