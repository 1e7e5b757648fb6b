import { isIPv6, type Socket } from 'node:net';
import { Router } from 'express';
import { requestFacts } from '../collect/collect-endpoint';
import type { CollectService } from '../collect/collect-service';

/**
 * The settings document Segment's browser library (`@segment/analytics-next`) fetches from
 * `<cdnURL>/v1/projects/<writeKey>/settings` before it loads: delivery to this host's
 * Segment-compatible API (`<host>/v1/t`, `/v1/p`, ...) and nothing else. No Segment-hosted
 * destination, middleware, plan or remote metrics: every destination runs here, server side.
 */
export function segmentSettingsDocument(writeKey: string, origin: string) {
  const url = new URL(origin);
  return {
    integrations: {
      'Segment.io': {
        apiKey: writeKey,
        apiHost: `${url.host}/v1`,
        protocol: url.protocol === 'https:' ? 'https' : 'http',
        unbundledIntegrations: [],
        addBundledMetadata: false,
        maybeBundledConfigIds: {},
      },
    },
    plan: {},
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    // Remote metrics would go to Segment's own API host.
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}

/**
 * Where the request arrived (this process's own address and port), for local development
 * without PUBLIC_TRACKING_URL. Never Host or X-Forwarded-Host: the document is cached by CDNs
 * without Vary, so a header would let one request point every page of a key at another host.
 */
export function arrivalOrigin(socket: Pick<Socket, 'localAddress' | 'localPort'>): string {
  // A dual-stack listener reports IPv4 peers as ::ffff:a.b.c.d.
  const address = (socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(?=\d+\.)/, '');
  const host = isIPv6(address) ? `[${address}]` : address;
  return `http://${host}:${socket.localPort ?? 80}`;
}

export function segmentSettingsRoutes(
  service: CollectService,
  clientAddress: Parameters<typeof requestFacts>[1],
  publicTrackingUrl?: string,
): Router {
  const router = Router();
  router.get('/v1/projects/:writeKey/settings', async (req, res, next) => {
    try {
      const writeKey = req.params.writeKey;
      // An unknown or revoked key gets 401 like the tracking routes: the library does not load.
      await service.authenticate(writeKey, requestFacts(req, clientAddress), { countAuthAttempts: true });
      // Shared caches may keep it: it depends on the path (the key) and configuration only.
      res.setHeader('Cache-Control', 'public, max-age=60');
      res.json(segmentSettingsDocument(writeKey, publicTrackingUrl ?? arrivalOrigin(req.socket)));
    } catch (error) {
      next(error);
    }
  });
  return router;
}
