/** The part of the Web Storage interface the SDK uses; localStorage is one. */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** A store whose keys can be listed: what the queue needs to find other tabs' queues. */
export interface EnumerableStore extends KeyValueStore {
  readonly length: number;
  key(index: number): string | null;
}

/** Storage keys, one prefix so a site can tell the SDK's entries apart. */
export const storageKeys = {
  anonymousId: 'pipeline.anonymous_id',
  userId: 'pipeline.user_id',
  session: 'pipeline.session',
  attribution: 'pipeline.attribution',
  consent: 'pipeline.consent',
  queuePrefix: 'pipeline.queue.',
} as const;

/**
 * localStorage when it works: it can be missing, disabled, or throw on every write (Safari's
 * private mode before 11, a full quota), so it is probed with a write.
 */
export function usableLocalStorage(win: { localStorage?: Storage }): Storage | null {
  try {
    const storage = win.localStorage;
    if (!storage) return null;
    storage.setItem('pipeline.probe', '1');
    storage.removeItem('pipeline.probe');
    return storage;
  } catch {
    return null;
  }
}

const COOKIE_MAX_AGE_S = 365 * 24 * 60 * 60;

/**
 * The fallback for ids when localStorage is unusable: first-party cookies of the page's own
 * host, for a year, SameSite=Lax (and Secure on https). Returns null when cookies do not stick.
 */
export function cookieStore(doc: Pick<Document, 'cookie'>, secure: boolean): KeyValueStore | null {
  const attributes = `; path=/; SameSite=Lax${secure ? '; Secure' : ''}`;
  const store: KeyValueStore = {
    getItem(key) {
      const wanted = `${encodeURIComponent(key)}=`;
      for (const part of doc.cookie.split(';')) {
        const cookie = part.trim();
        if (cookie.startsWith(wanted)) return decodeURIComponent(cookie.slice(wanted.length));
      }
      return null;
    },
    setItem(key, value) {
      doc.cookie = `${encodeURIComponent(key)}=${encodeURIComponent(value)}; max-age=${COOKIE_MAX_AGE_S}${attributes}`;
    },
    removeItem(key) {
      doc.cookie = `${encodeURIComponent(key)}=; max-age=0${attributes}`;
    },
  };
  try {
    store.setItem('pipeline.probe', '1');
    const works = store.getItem('pipeline.probe') === '1';
    store.removeItem('pipeline.probe');
    return works ? store : null;
  } catch {
    return null;
  }
}

/** The last resort: state that lives as long as the page. */
export function memoryStore(): EnumerableStore {
  const entries = new Map<string, string>();
  return {
    getItem: (key) => entries.get(key) ?? null,
    setItem: (key, value) => void entries.set(key, String(value)),
    removeItem: (key) => void entries.delete(key),
    get length() {
      return entries.size;
    },
    key: (index) => [...entries.keys()][index] ?? null,
  };
}

/** Reads and writes never throw: storage failing must not break the site's own code. */
export function safeGet(store: KeyValueStore, key: string): string | null {
  try {
    return store.getItem(key);
  } catch {
    return null;
  }
}

export function safeSet(store: KeyValueStore, key: string, value: string | null): boolean {
  try {
    if (value === null) store.removeItem(key);
    else store.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}
