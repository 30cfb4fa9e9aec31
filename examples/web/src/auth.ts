// The sign-in stub: a token minted by `itemgraph token`, kept for this tab only.
const KEY = "itemgraph.token";

export const getToken = (): string | null => sessionStorage.getItem(KEY);
export const storeToken = (token: string) => sessionStorage.setItem(KEY, token);
export const clearToken = () => sessionStorage.removeItem(KEY);

/** Whether `token` has a JWT's shape (three dot-separated parts). Who it names is the
 * server's to say (`viewer`): the client never reads the claims. */
export const looksLikeToken = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);
