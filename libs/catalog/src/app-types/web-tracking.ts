import { defineAppType, fields } from '../app-type';

export const webTracking = defineAppType({
  appType: 'web_tracking',
  name: 'Web tracking (browser SDK)',
  description:
    'Events from the browser SDK, the tracking API (/collect) and Segment-compatible libraries, sent with a write key of a source on this app. Loads the warehouse tables events, users, groups and aliases.',
  credentials: fields({}),
  config: fields({}),
  example: { credentials: {}, config: {} },
  tracking: true,
});
