import { createClient } from "graphql-ws";
import {
  Environment,
  Network,
  Observable,
  RecordSource,
  Store,
  type FetchFunction,
  type GraphQLResponse,
  type SubscribeFunction,
} from "relay-runtime";
import { ServerErrors, type ServerError } from "../errors";

/**
 * The server's GraphQL endpoint: `?api=<url>` on the app's address (kept for the tab), else
 * `VITE_ITEMGRAPH_URL` at build time, else a server started with the defaults.
 */
function serverUrl(): string {
  const fromQuery = new URLSearchParams(window.location.search).get("api");
  if (fromQuery) sessionStorage.setItem("itemgraph.api", fromQuery);
  return (
    fromQuery ??
    sessionStorage.getItem("itemgraph.api") ??
    (import.meta.env.VITE_ITEMGRAPH_URL || "http://127.0.0.1:8080/graphql")
  );
}

export const GRAPHQL_URL: string = serverUrl();

/** Pauses before the 2nd and 3rd attempt of a request whose errors are all retryable. */
const RETRY_DELAYS_MS = [300, 1000];
/** Retryable codes after which nothing was written: a mutation may be sent again too. */
const NOTHING_WRITTEN = new Set(["THROTTLED", "CONTENTION"]);

type Body = { data?: unknown; errors?: ServerError[] };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function worthRetrying(errors: ServerError[], isMutation: boolean): boolean {
  return (
    errors.length > 0 &&
    errors.every(
      (e) =>
        e.extensions?.retryable === true &&
        (!isMutation || NOTHING_WRITTEN.has(e.extensions.code ?? "")),
    )
  );
}

function createFetch(token: string): FetchFunction {
  return async (request, variables) => {
    const isMutation = request.operationKind === "mutation";
    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < RETRY_DELAYS_MS.length;
      let body: Body;
      try {
        const response = await fetch(GRAPHQL_URL, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/graphql-response+json, application/json",
            Authorization: `Bearer ${token}`,
          },
          body: JSON.stringify({ query: request.text, variables, operationName: request.name }),
        });
        body = (await response.json()) as Body;
      } catch (error) {
        // No answer at all: a query is safe to send again, a mutation may have been applied.
        if (!isMutation && canRetry) {
          await sleep(RETRY_DELAYS_MS[attempt]);
          continue;
        }
        throw error;
      }
      const errors = body.errors ?? [];
      if (canRetry && worthRetrying(errors, isMutation)) {
        await sleep(RETRY_DELAYS_MS[attempt]);
        continue;
      }
      // Any error fails the whole operation here: Relay would otherwise store the nulls
      // beside the errors, and a page would show "not found" for what was a failure.
      if (errors.length > 0 || body.data == null) throw new ServerErrors(errors);
      return body as GraphQLResponse;
    }
  };
}

/** Pauses before subscribing again after a dropped connection: doubling, at most 5 s. */
const RESUME_DELAY_MS = { first: 250, max: 5000 };

/** The `cursor` of a subscription event: its root field's, when it has one. */
function cursorOf(data: unknown): string | null {
  if (data == null || typeof data !== "object") return null;
  const root = Object.values(data as Record<string, unknown>)[0];
  const cursor = root && typeof root === "object" ? (root as { cursor?: unknown }).cursor : null;
  return typeof cursor === "string" ? cursor : null;
}

/** Whether a subscription that ended this way is worth resuming: the connection was lost
 * (a network error, an abnormal close) or the server dropped a subscriber that fell
 * behind. Not the server refusing it (a 44xx close, GraphQL errors): those are answers. */
function resumable(error: unknown): boolean {
  if (Array.isArray(error)) return false;
  if (error instanceof ServerErrors) {
    return error.errors.every((e) => e.extensions?.code === "SUBSCRIBER_TOO_SLOW");
  }
  const code = (error as CloseEvent | undefined)?.code;
  return typeof code !== "number" || code < 4400 || code > 4499;
}

function createSubscribe(token: string) {
  const client = createClient({
    url: GRAPHQL_URL.replace(/^http/, "ws"),
    connectionParams: { Authorization: `Bearer ${token}` },
    lazy: true, // connect on the first subscription, close after the last
    // A dropped connection ends every subscription at once (below, each resumes from its
    // last event); graphql-ws's own retry would subscribe again from the start.
    retryAttempts: 0,
  });
  // Each subscription resumes after a lost connection from its last event's `cursor`
  // (its document takes `$after`): the server sends what happened since first, so nothing
  // is missed and nothing repeated. `EVENTS_EXPIRED` (the cursor is too old) is the
  // page's to handle: it reloads what it shows.
  const subscribe: SubscribeFunction = (request, variables) =>
    Observable.create<GraphQLResponse>((sink) => {
      let after: string | null = (variables.after as string | null | undefined) ?? null;
      let delay = RESUME_DELAY_MS.first;
      let stop: (() => void) | null = null;
      let timer: ReturnType<typeof setTimeout> | null = null;
      let closed = false;
      // Which attempt is current: a superseded attempt's late callbacks are ignored.
      let attempt = 0;
      const retry = (error: unknown) => {
        if (closed) return;
        if (!resumable(error)) {
          sink.error(toError(error));
          return;
        }
        attempt++;
        stop?.();
        timer = setTimeout(start, delay);
        delay = Math.min(delay * 2, RESUME_DELAY_MS.max);
      };
      const start = () => {
        const mine = ++attempt;
        const current = () => !closed && mine === attempt;
        stop = client.subscribe(
          { operationName: request.name, query: request.text ?? "", variables: { ...variables, after } },
          {
            next: (result) => {
              if (!current()) return;
              if (result.data == null && result.errors) {
                const errors = new ServerErrors(result.errors as ServerError[]);
                if (resumable(errors)) retry(errors);
                else sink.error(errors);
                return;
              }
              delay = RESUME_DELAY_MS.first;
              after = cursorOf(result.data) ?? after;
              sink.next(result as GraphQLResponse);
            },
            error: (error) => {
              if (current()) retry(error);
            },
            complete: () => {
              if (current()) sink.complete();
            },
          },
        );
      };
      start();
      return () => {
        closed = true;
        if (timer) clearTimeout(timer);
        stop?.();
      };
    });
  return { subscribe, dispose: () => client.dispose() };
}

function toError(error: unknown): Error {
  if (Array.isArray(error)) return new ServerErrors(error as ServerError[]);
  if (error instanceof Error) return error;
  return new Error(`subscription connection closed (${(error as CloseEvent).code})`);
}

/** A Relay environment that speaks for one token; `dispose` closes its WebSocket. */
export function createRelayEnvironment(token: string) {
  const { subscribe, dispose } = createSubscribe(token);
  const environment = new Environment({
    network: Network.create(createFetch(token), subscribe),
    store: new Store(new RecordSource()),
  });
  return { environment, dispose };
}
