const SLOTS = 16_384;

/** CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0) by byte, as Redis Cluster computes it. */
const TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
  return crc & 0xffff;
});

/**
 * The Redis Cluster slot of a key whose hashed part is `hashed` (its hash tag, or the whole
 * key without one), as `CLUSTER KEYSLOT` answers: CRC16 of its UTF-8 bytes, modulo 16384.
 */
export function hashSlot(hashed: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashed)) crc = ((crc << 8) & 0xffff) ^ TABLE[(crc >> 8) ^ byte];
  return crc % SLOTS;
}
