// The package ships no types; ioredis uses the same function to route a command to its node.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0..16383) of a key: CRC16 of its hash tag, or of all of it. */
  function calculateSlot(key: string | Buffer): number;
  namespace calculateSlot {
    /** The keys' common slot, or -1 when they do not share one. */
    function generateMulti(keys: readonly (string | Buffer)[]): number;
  }
  export = calculateSlot;
}
