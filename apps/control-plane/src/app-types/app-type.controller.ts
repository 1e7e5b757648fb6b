import { appTypeDefinition } from '@pipeline/catalog';
import { Controller, Get, Path, Response, Route, Security, Tags } from '@tsoa/runtime';
import { notFound } from '../http/api-errors';
import type { Problem } from '../http/problem';
import type { AppTypeView } from './app-type.dto';
import { appTypeView, appTypeViews } from './app-type-views';

/** The app types apps can be created with, and the JSON Schemas of their credentials and config. */
@Route('api/v1/app-types')
@Tags('App types')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
export class AppTypesController extends Controller {
  /**
   * Every app type, with its roles, consent group, import tasks and the JSON Schemas that
   * `POST /api/v1/apps` and `PATCH /api/v1/apps/{appId}` check `credentials` and `config`
   * against (422 `invalid_app_settings` naming each field). Secret fields are marked
   * `writeOnly`, so a client can render a form with password inputs.
   */
  @Get()
  @Security('api_key', ['apps.read'])
  async listAppTypes(): Promise<{ data: AppTypeView[] }> {
    return { data: appTypeViews() };
  }

  /** One app type. */
  @Get('{appType}')
  @Security('api_key', ['apps.read'])
  @Response<Problem>(404, 'No such app type')
  async getAppType(@Path() appType: string): Promise<{ data: AppTypeView }> {
    const definition = appTypeDefinition(appType);
    if (!definition) throw notFound('app type', appType);
    return { data: appTypeView(definition) };
  }
}
