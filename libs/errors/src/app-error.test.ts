import { AppError, isAppError } from './index';

describe('AppError', () => {
  it('carries status, code, message and details', () => {
    const error = new AppError(409, 'app_in_use', 'An active source uses this app', { sourceIds: ['s1'] });
    expect(error).toBeInstanceOf(Error);
    expect(isAppError(error)).toBe(true);
    expect({
      status: error.status,
      code: error.code,
      message: error.message,
      details: error.details,
    }).toEqual({
      status: 409,
      code: 'app_in_use',
      message: 'An active source uses this app',
      details: { sourceIds: ['s1'] },
    });
  });

  it('is told apart from other errors', () => {
    expect(isAppError(new Error('x'))).toBe(false);
    expect(isAppError({ status: 404, code: 'not_found' })).toBe(false);
  });
});
