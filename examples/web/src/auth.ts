// The sign-in stub: a token minted by `itemgraph token`, kept for this tab only.
const KEY = "itemgraph.token";

export const getToken = (): string | null => sessionStorage.getItem(KEY);
export const storeToken = (token: string) => sessionStorage.setItem(KEY, token);
export const clearToken = () => sessionStorage.removeItem(KEY);

export type Claims = { org?: string; role?: string; sub?: string; exp?: number };

/** The token's claims, unverified (the server verifies): enough to know the organization. */
export function decodeClaims(token: string): Claims | null {
  const payload = token.split(".")[1];
  if (!payload) return null;
  try {
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    return JSON.parse(json) as Claims;
  } catch {
    return null;
  }
}
