import { createHash } from 'node:crypto';
import { constantTimeEqual, hashToken, issueToken } from './secret-token';

// The tokens of API keys and write keys: what is shown once, what is stored, and how a
// presented token is compared. Pure: write-keys.test.ts and the CLI tests cover issuing over
// a real database.

describe('issueToken', () => {
  it.each(['plk', 'wk'] as const)('issues %s_ and 43 base64url characters (256 bits)', (kind) => {
    const { token } = issueToken(kind);
    expect(token).toMatch(new RegExp(`^${kind}_[A-Za-z0-9_-]{43}$`));
    expect(Buffer.from(token.slice(kind.length + 1), 'base64url')).toHaveLength(32);
  });

  it('keeps the kind and 6 characters as the prefix, and stores the SHA-256 of the whole token', () => {
    const { token, prefix, hash } = issueToken('wk');
    expect(prefix).toBe(token.slice(0, 9));
    expect(prefix).toHaveLength(9);
    const api = issueToken('plk');
    expect(api.prefix).toBe(api.token.slice(0, 10));
    expect(hash).toBe(createHash('sha256').update(token, 'utf8').digest('hex'));
  });

  it('never issues the same token twice', () => {
    const tokens = Array.from({ length: 50 }, () => issueToken('plk').token);
    expect(new Set(tokens).size).toBe(50);
  });
});

describe('hashToken', () => {
  it('is the hex SHA-256 of the UTF-8 token', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashToken('é')).toBe(createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
    expect(hashToken('é')).not.toBe(createHash('sha256').update(Buffer.from('é', 'latin1')).digest('hex'));
  });
});

describe('constantTimeEqual', () => {
  it('is true for equal strings only, whatever their lengths', () => {
    expect(constantTimeEqual('token-1', 'token-1')).toBe(true);
    expect(constantTimeEqual('token-1', 'token-2')).toBe(false);
    expect(constantTimeEqual('token', 'token-longer')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('', 'x')).toBe(false);
  });
});
