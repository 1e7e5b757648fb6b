import {
  defineLookAlike,
  HASHED,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
} from '../../testing/look-alike';

// Google: OAuth token endpoint and Google Ads ConversionUploadService.UploadClickConversions.

/** The customer the Google Ads look-alike knows. */
export const GOOGLE_ADS_LOOKALIKE_CUSTOMER = '1234567890';
const GOOGLE_ADS_MAX_CONVERSIONS = 2000;
const GOOGLE_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?([+-]\d{2}:\d{2})$/;
/** Google keeps clicks for conversions for at most 90 days. */
const GOOGLE_MAX_CLICK_AGE_MS = 90 * 86_400_000;

/** The access token the look-alike issues for a refresh token: the same each time. */
const googleAccessToken = (refreshToken: string) =>
  `ya29.lookalike-${Buffer.from(refreshToken).toString('base64url').slice(0, 16)}`;

function googleConversionProblem(
  conversion: unknown,
  customer: string,
  now: number,
): [string, string, string] | undefined {
  // [error group, code, message]
  if (!isObject(conversion)) return ['requestError', 'INVALID_INPUT', 'conversion must be an object'];
  const clickIds = ['gclid', 'gbraid', 'wbraid'].filter((k) => conversion[k] !== undefined);
  const identifiers = conversion.userIdentifiers;
  if (clickIds.length > 1)
    return ['conversionUploadError', 'GBRAID_WBRAID_BOTH_SET', 'at most one of gclid, gbraid, wbraid'];
  if (clickIds.length === 1 && identifiers !== undefined)
    return ['conversionUploadError', 'CONVERSION_NOT_FOUND', 'a click id and user identifiers together'];
  if (clickIds.length === 0) {
    if (!Array.isArray(identifiers) || identifiers.length === 0)
      return ['conversionUploadError', 'UNPARSEABLE_GCLID', 'a click id or user identifiers are required'];
    for (const identifier of identifiers as unknown[]) {
      if (!isObject(identifier)) return ['requestError', 'INVALID_INPUT', 'userIdentifiers must be objects'];
      const hashes = ['hashedEmail', 'hashedPhoneNumber'].filter((k) => identifier[k] !== undefined);
      if (hashes.length !== 1 || !HASHED.test(String(identifier[hashes[0] as string])))
        return [
          'collectionSizeError',
          'INVALID_USER_IDENTIFIER',
          'each user identifier is one SHA-256 hex hash',
        ];
    }
  } else {
    const id = conversion[clickIds[0] as string];
    if (!nonEmpty(id) || !/^[\w-]{1,200}$/.test(id))
      return ['conversionUploadError', 'UNPARSEABLE_GCLID', `${clickIds[0]} cannot be parsed`];
  }
  if (
    typeof conversion.conversionAction !== 'string' ||
    !new RegExp(`^customers/${customer}/conversionActions/\\d+$`).test(conversion.conversionAction)
  )
    return [
      'conversionUploadError',
      'INVALID_CONVERSION_ACTION',
      'conversionAction is not a resource name of this customer',
    ];
  const time =
    typeof conversion.conversionDateTime === 'string'
      ? GOOGLE_DATE_TIME.exec(conversion.conversionDateTime)
      : null;
  if (!time)
    return [
      'dateError',
      'INVALID_FIELD_VALUES_IN_DATE_TIME',
      'conversionDateTime must be yyyy-mm-dd hh:mm:ss+|-hh:mm',
    ];
  const at = Date.parse(`${time[1]}-${time[2]}-${time[3]}T${time[4]}:${time[5]}:${time[6]}${time[7]}`);
  if (Number.isNaN(at))
    return ['dateError', 'INVALID_FIELD_VALUES_IN_DATE_TIME', 'conversionDateTime is not a date'];
  if (at > now + 60_000)
    return ['conversionUploadError', 'CONVERSION_PRECEDES_EVENT', 'the conversion is in the future'];
  if (now - at > GOOGLE_MAX_CLICK_AGE_MS)
    return ['conversionUploadError', 'EXPIRED_EVENT', 'the click is older than the conversion window'];
  if (
    conversion.conversionValue !== undefined &&
    (typeof conversion.conversionValue !== 'number' || !Number.isFinite(conversion.conversionValue))
  )
    return ['fieldError', 'INVALID_VALUE', 'conversionValue must be a number'];
  if (
    conversion.currencyCode !== undefined &&
    (typeof conversion.currencyCode !== 'string' || !/^[A-Z]{3}$/.test(conversion.currencyCode))
  )
    return ['conversionUploadError', 'INVALID_CURRENCY_CODE', 'currencyCode must be ISO 4217'];
  if (
    conversion.orderId !== undefined &&
    (typeof conversion.orderId !== 'string' ||
      conversion.orderId.length === 0 ||
      conversion.orderId.length > 64)
  )
    return ['stringLengthError', 'TOO_LONG', 'orderId must have 1 to 64 characters'];
  return undefined;
}

const googleAds: LookAlikeHandler = (incoming, state) => {
  if (incoming.method === 'POST' && incoming.path === '/token') {
    const form = (incoming.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
      ? new URLSearchParams(incoming.body)
      : new URLSearchParams();
    if (form.get('grant_type') !== 'refresh_token')
      return {
        status: 400,
        body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' },
      };
    if (
      form.get('client_id') !== state.expected.clientId ||
      form.get('client_secret') !== state.expected.clientSecret
    )
      return {
        status: 401,
        body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' },
      };
    if (form.get('refresh_token') !== state.expected.refreshToken)
      return {
        status: 400,
        body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' },
      };
    state.accept('token', { client_id: form.get('client_id') });
    return {
      status: 200,
      body: {
        access_token: googleAccessToken(state.expected.refreshToken ?? ''),
        expires_in: 3599,
        scope: 'https://www.googleapis.com/auth/adwords',
        token_type: 'Bearer',
      },
    };
  }
  const rpcError = (
    status: number,
    statusText: string,
    message: string,
    errorCode?: Record<string, string>,
  ) => ({
    status,
    body: {
      error: {
        code: status,
        message,
        status: statusText,
        ...(errorCode
          ? {
              details: [
                {
                  '@type': 'type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure',
                  errors: [{ errorCode, message }],
                  requestId: 'lookalike-request',
                },
              ],
            }
          : {}),
      },
    },
  });
  const path = incoming.path.match(/^\/(v\d+)\/customers\/(\d+):uploadClickConversions$/);
  if (incoming.method !== 'POST' || !path) return rpcError(404, 'NOT_FOUND', 'Not Found');
  if (incoming.headers.authorization !== `Bearer ${googleAccessToken(state.expected.refreshToken ?? '')}`)
    return rpcError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.', {
      authenticationError: 'OAUTH_TOKEN_INVALID',
    });
  if (incoming.headers['developer-token'] !== state.expected.developerToken)
    return rpcError(401, 'UNAUTHENTICATED', 'The developer token is not valid.', {
      authenticationError: 'DEVELOPER_TOKEN_INVALID',
    });
  const customer = path[2] ?? '';
  if (customer !== GOOGLE_ADS_LOOKALIKE_CUSTOMER)
    return rpcError(403, 'PERMISSION_DENIED', 'The caller does not have permission', {
      authorizationError: 'USER_PERMISSION_DENIED',
    });
  const login = incoming.headers['login-customer-id'];
  if (login !== undefined && !/^\d{10}$/.test(String(login)))
    return rpcError(400, 'INVALID_ARGUMENT', 'login-customer-id must be 10 digits', {
      requestError: 'INVALID_INPUT',
    });
  const body = parseJson(incoming.body);
  if (
    !isJson(incoming) ||
    !isObject(body) ||
    !Array.isArray(body.conversions) ||
    body.conversions.length === 0
  )
    return rpcError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', {
      requestError: 'REQUIRED_FIELD_MISSING',
    });
  if (body.conversions.length > GOOGLE_ADS_MAX_CONVERSIONS)
    return rpcError(400, 'INVALID_ARGUMENT', 'Too many operations in the request.', {
      requestError: 'TOO_MANY_OPERATIONS',
    });
  if (body.partialFailure !== true)
    return rpcError(400, 'INVALID_ARGUMENT', 'partialFailure must be true for this upload.', {
      requestError: 'INVALID_INPUT',
    });
  const now = Date.now();
  const errors: Record<string, unknown>[] = [];
  const results: Record<string, unknown>[] = [];
  (body.conversions as unknown[]).forEach((conversion, index) => {
    const problem = googleConversionProblem(conversion, customer, now);
    const scripted = problem
      ? undefined
      : state.rejection(conversion as Record<string, unknown>, 'uploadClickConversions');
    if (problem || scripted) {
      const [group, code, message] = problem ?? [
        'conversionUploadError',
        scripted as string,
        scripted as string,
      ];
      errors.push({
        errorCode: { [group]: code },
        message,
        location: { fieldPathElements: [{ fieldName: 'conversions', index }] },
      });
      results.push({});
      return;
    }
    const item = conversion as Record<string, unknown>;
    state.accept('uploadClickConversions', item);
    results.push({
      ...(item.gclid ? { gclid: item.gclid } : {}),
      conversionAction: item.conversionAction,
      conversionDateTime: item.conversionDateTime,
    });
  });
  return {
    status: 200,
    body: {
      results,
      ...(errors.length > 0
        ? {
            partialFailureError: {
              code: 3,
              message: `Errors in ${errors.length} conversion(s).`,
              details: [
                {
                  '@type': `type.googleapis.com/google.ads.googleads.${path[1]}.errors.GoogleAdsFailure`,
                  errors,
                  requestId: 'lookalike-request',
                },
              ],
            },
          }
        : {}),
      jobId: '1',
    },
  };
};

/** The app config the look-alike expects (the customer and conversion actions it knows). */
const googleAdsAppConfig = {
  customerId: '123-456-7890',
  conversionActions: { Clicked: '1001', 'Order Completed': '1002', 'Signed Up': '1003' },
};

export const googleAdsLookAlike = defineLookAlike({
  vendor: 'google_ads',
  kind: 'advertising',
  credentials: {
    developerToken: 'dev-token-look-alike',
    clientId: 'look-alike.apps.googleusercontent.com',
    clientSecret: 'look-alike-client-secret',
    refreshToken: '1//look-alike-refresh-token',
  },
  appConfig: () => ({ ...googleAdsAppConfig }),
  handle: googleAds,
  scriptedBody: (status) => ({
    error: {
      code: status,
      message: status === 429 ? 'Resource has been exhausted (e.g. check quota).' : 'scripted failure',
      status: status === 429 ? 'RESOURCE_EXHAUSTED' : status === 400 ? 'INVALID_ARGUMENT' : 'INTERNAL',
    },
  }),
  // The token endpoint answers 401 invalid_client to a wrong client.
  contract: { perRequest: 2000, authStatus: 401, events: 'click', warm: true },
});
