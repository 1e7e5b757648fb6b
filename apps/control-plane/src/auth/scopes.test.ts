import { AppError } from '@pipeline/errors';
import { checkScopes, isScope, scopes } from './scopes';

const all =
  'apps.read, apps.write, sources.read, sources.write, integrations.read, integrations.write, write_keys.read, write_keys.write, usage.read, tasks.read, tasks.write, tasks.manage, dead_letters.read, dead_letters.replay, dead_letters.discard, regulations.read, regulations.write, tracking_plans.read, tracking_plans.write, functions.read, functions.write';

function refusal(requested: string[]): { status: number; code: string; message: string } {
  try {
    checkScopes(requested);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, code: error.code, message: error.message };
  }
  throw new Error('expected a refusal');
}

describe('scopes', () => {
  it('are one per resource and verb', () => {
    expect(scopes.join(', ')).toBe(all);
    expect(scopes).toHaveLength(21);
  });

  it('isScope takes exactly the names of the list', () => {
    expect(scopes.filter(isScope)).toHaveLength(21);
    expect(['apps', 'apps.Read', 'apps.read ', '', 'admin', 'toString'].filter(isScope)).toEqual([]);
  });

  it('an issued key carries each requested scope once, in order', () => {
    expect(checkScopes(['usage.read', 'apps.write', 'usage.read'])).toEqual(['usage.read', 'apps.write']);
    expect(checkScopes(['tasks.manage'])).toEqual(['tasks.manage']);
  });

  it('refuses no scope and unknown scopes, naming the unknown ones', () => {
    expect(refusal([])).toEqual({
      status: 400,
      code: 'invalid_scopes',
      message: `Scopes must be some of: ${all}`,
    });
    expect(refusal(['apps.read', 'admin', 'apps.delete'])).toEqual({
      status: 400,
      code: 'invalid_scopes',
      message: `Scopes must be some of: ${all}; unknown: admin, apps.delete`,
    });
  });
});
