/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The server's GraphQL endpoint; WebSocket subscriptions go to the same URL as ws(s)://. */
  readonly VITE_ITEMGRAPH_URL?: string;
}

interface ImportMeta {
  readonly env: ImportMetaEnv;
}
