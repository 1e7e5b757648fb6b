import { cookieStore, memoryStore, safeGet, safeSet, usableLocalStorage } from './storage';

/** document.cookie's behaviour, enough for the store: set one cookie per write, read them all. */
function cookieJar() {
  const jar = new Map<string, string>();
  const writes: string[] = [];
  return {
    writes,
    get cookie() {
      return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    },
    set cookie(line: string) {
      writes.push(line);
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const [name = '', value = ''] = pair.split('=');
      if (attributes.includes('max-age=0')) jar.delete(name);
      else jar.set(name, value);
    },
  };
}

describe('storage', () => {
  it('falls back to first-party cookies that round-trip any value', () => {
    const jar = cookieJar();
    const store = cookieStore(jar, true);
    expect(store).not.toBeNull();
    store!.setItem('pipeline.user_id', 'a; b=c é');
    expect(store!.getItem('pipeline.user_id')).toBe('a; b=c é');
    expect(jar.writes.at(-1)).toMatch(/; max-age=31536000; path=\/; SameSite=Lax; Secure$/);
    store!.removeItem('pipeline.user_id');
    expect(store!.getItem('pipeline.user_id')).toBeNull();
  });

  it('gives up on cookies that do not stick, and on a localStorage that throws', () => {
    const cookiesDisabled = {
      get cookie() {
        return '';
      },
      set cookie(_line: string) {
        // a browser with cookies blocked drops every write
      },
    };
    expect(cookieStore(cookiesDisabled, false)).toBeNull();
    const throwing = {
      get localStorage(): Storage {
        throw new Error('SecurityError');
      },
    };
    expect(usableLocalStorage(throwing)).toBeNull();
    expect(usableLocalStorage({})).toBeNull();
    const memory = memoryStore() as unknown as Storage;
    expect(usableLocalStorage({ localStorage: memory })).toBe(memory);
  });

  it('never throws into the caller when a store fails', () => {
    const failing = {
      getItem: () => {
        throw new Error('x');
      },
      setItem: () => {
        throw new Error('x');
      },
      removeItem: () => undefined,
    };
    expect(safeGet(failing, 'k')).toBeNull();
    expect(safeSet(failing, 'k', 'v')).toBe(false);
    expect(safeSet(failing, 'k', null)).toBe(true);
  });
});
