/** `Cents` is a decimal string of a whole number: exact with BigInt, whatever its size. */
export function formatCents(cents: string, currency: string): string {
  const value = BigInt(cents);
  const sign = value < 0n ? "-" : "";
  const abs = value < 0n ? -value : value;
  const whole = (abs / 100n).toLocaleString("en-US");
  const fraction = (abs % 100n).toString().padStart(2, "0");
  return `${sign}${whole}.${fraction} ${currency}`;
}

export const formatDate = (rfc3339: string) =>
  new Date(rfc3339).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
