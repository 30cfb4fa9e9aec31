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

function createSubscribe(token: string) {
  const client = createClient({
    url: GRAPHQL_URL.replace(/^http/, "ws"),
    connectionParams: { Authorization: `Bearer ${token}` },
    lazy: true, // connect on the first subscription, close after the last
  });
  const subscribe: SubscribeFunction = (request, variables) =>
    Observable.create<GraphQLResponse>((sink) =>
      client.subscribe(
        { operationName: request.name, query: request.text ?? "", variables },
        {
          next: (result) => {
            if (result.data == null && result.errors) sink.error(new ServerErrors(result.errors));
            else sink.next(result as GraphQLResponse);
          },
          error: (error) =>
            sink.error(
              Array.isArray(error)
                ? new ServerErrors(error)
                : error instanceof Error
                  ? error
                  : new Error(`subscription connection closed (${(error as CloseEvent).code})`),
            ),
          complete: () => sink.complete(),
        },
      ),
    );
  return { subscribe, dispose: () => client.dispose() };
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
