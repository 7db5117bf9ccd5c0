/** A fixed-size bit set, serialized as base64: the leader's per-item memory is one bit per item per set. */
export class Bitmap {
  private readonly bytes: Uint8Array;

  private constructor(
    readonly size: number,
    bytes?: Uint8Array,
  ) {
    this.bytes = bytes ?? new Uint8Array(Math.ceil(size / 8));
  }

  /** An empty bitmap of `size` bits. */
  static empty(size: number): Bitmap {
    return new Bitmap(size);
  }

  /** Restores a bitmap from {@link toBase64}. @throws Error when the text does not fit `size`. */
  static fromBase64(text: string, size: number): Bitmap {
    const bytes = Uint8Array.from(Buffer.from(text, "base64"));
    if (bytes.length !== Math.ceil(size / 8))
      throw new Error(`bitmap of ${bytes.length} bytes does not hold ${size} bits`);
    return new Bitmap(size, bytes);
  }

  /** Whether bit `index` is set. */
  has(index: number): boolean {
    return ((this.bytes[index >> 3] ?? 0) & (1 << (index & 7))) !== 0;
  }

  /** Sets bit `index`; returns false if it was already set. */
  add(index: number): boolean {
    if (index < 0 || index >= this.size || this.has(index)) return false;
    const byte = index >> 3;
    this.bytes[byte] = (this.bytes[byte] ?? 0) | (1 << (index & 7));
    return true;
  }

  /** Clears bit `index`; returns false if it was not set. */
  delete(index: number): boolean {
    if (!this.has(index)) return false;
    const byte = index >> 3;
    this.bytes[byte] = (this.bytes[byte] ?? 0) & ~(1 << (index & 7));
    return true;
  }

  /** How many bits are set. */
  count(): number {
    let count = 0;
    for (let byte of this.bytes) for (; byte !== 0; byte &= byte - 1) count++; // one step per set bit
    return count;
  }

  /** Whether no bit is set. */
  isEmpty(): boolean {
    return this.bytes.every((byte) => byte === 0);
  }

  toBase64(): string {
    return Buffer.from(this.bytes).toString("base64");
  }
}
