import { useMemo, useState, useTransition } from "react";
import { graphql, useLazyLoadQuery, useSubscription } from "react-relay";
import { ConnectionHandler, type GraphQLSubscriptionConfig } from "relay-runtime";
import { ErrorMessage } from "../components/ErrorMessage";
import { TicketRow } from "../components/TicketRow";
import { toProblem, type Problem } from "../errors";
import type { LiveTicketsPageQuery, TicketStatus } from "./__generated__/LiveTicketsPageQuery.graphql";
import type { LiveTicketsPageSubscription } from "./__generated__/LiveTicketsPageSubscription.graphql";
import { STATUSES } from "./OrganizationPage";

type LogEntry = { key: string; kind: string; title: string; status: string; previousStatus?: string | null };

/** One status queue kept current by `ticketEvents`: the events update the Relay store. */
export default function LiveTicketsPage({ org }: { org: string }) {
  const [status, setStatus] = useState<TicketStatus>("OPEN");
  const [, startTransition] = useTransition();
  const [log, setLog] = useState<LogEntry[]>([]);
  const [problem, setProblem] = useState<Problem | null>(null);
  // Bumped when events were missed for good (`EVENTS_EXPIRED`): the list is fetched again
  // and the subscription starts afresh.
  const [reload, setReload] = useState(0);
  const [missed, setMissed] = useState(false);
  const { organization } = useLazyLoadQuery<LiveTicketsPageQuery>(
    graphql`
      query LiveTicketsPageQuery($org: String!, $status: TicketStatus!) {
        organization(slug: $org) {
          tickets(status: $status, first: 20) @connection(key: "LiveTicketsPage_tickets") {
            __id
            edges {
              node {
                id
                ...TicketRow_ticket
              }
            }
          }
        }
      }
    `,
    { org, status },
    { fetchPolicy: "store-and-network", fetchKey: reload },
  );
  const connectionId = organization?.tickets.__id;

  const config = useMemo<GraphQLSubscriptionConfig<LiveTicketsPageSubscription>>(
    () => ({
      subscription: graphql`
        subscription LiveTicketsPageSubscription($org: String!, $status: TicketStatus, $after: String) {
          ticketEvents(org: $org, status: $status, after: $after) {
            kind
            previousStatus
            cursor
            ticket {
              id
              title
              status
              ...TicketRow_ticket
            }
          }
        }
      `,
      // `after` starts empty; after a dropped connection the network layer resumes from
      // the last event's cursor (relay/environment.ts), so no change is missed or repeated.
      variables: { org, status, after: null },
      // The ticket's fields are merged into the store by id on their own; the list's
      // membership is ours to keep: in when it is (now) in this status, out otherwise.
      updater: (store, data) => {
        const connection = connectionId ? store.get(connectionId) : null;
        const event = data?.ticketEvents;
        if (!connection || !event) return;
        const ticket = store.get(event.ticket.id);
        const belongs = event.kind !== "DELETED" && event.ticket.status === status;
        if (!belongs || !ticket) {
          ConnectionHandler.deleteNode(connection, event.ticket.id);
          return;
        }
        const present = (connection.getLinkedRecords("edges") ?? []).some(
          (edge) => edge?.getLinkedRecord("node")?.getDataID() === event.ticket.id,
        );
        if (!present) {
          const edge = ConnectionHandler.createEdge(store, connection, ticket, "TicketEdge");
          ConnectionHandler.insertEdgeBefore(connection, edge);
        }
      },
      onNext: (data) => {
        const event = data?.ticketEvents;
        if (!event) return;
        const { kind, previousStatus, cursor, ticket } = event;
        setLog((entries) =>
          [{ key: cursor, kind, previousStatus, title: ticket.title, status: ticket.status }, ...entries].slice(0, 10),
        );
      },
      onError: (error) => {
        const problem = toProblem(error);
        if (problem.code !== "EVENTS_EXPIRED") return setProblem(problem);
        // Too long away for the missed changes to be sent: show what is there now.
        setMissed(true);
        startTransition(() => setReload((n) => n + 1));
      },
    }),
    // `reload` too: a fresh subscription once the list is fetched again.
    [org, status, connectionId, reload],
  );
  useSubscription(config);

  if (!organization) return <p data-testid="not-found">No organization “{org}”.</p>;
  return (
    <>
      <h1>Live queue</h1>
      <div role="tablist" className="tabs">
        {STATUSES.map((s) => (
          <button
            key={s}
            role="tab"
            aria-selected={s === status}
            data-testid={`live-tab-${s}`}
            onClick={() =>
              startTransition(() => {
                setStatus(s);
                setLog([]);
                setMissed(false);
              })
            }
          >
            {s}
          </button>
        ))}
      </div>
      {problem && <ErrorMessage problem={problem} testId="live-error" />}
      {missed && (
        <p role="status" className="muted" data-testid="live-expired">
          Changes were missed while the connection was down, so the list was fetched again.
        </p>
      )}
      <div className="columns">
        <ul className="rows" data-testid="live-list">
          {organization.tickets.edges.map((edge) => (
            <TicketRow key={edge.node.id} ticket={edge.node} />
          ))}
        </ul>
        <aside>
          <h2>Events</h2>
          {log.length === 0 && <p className="muted">Waiting for changes to {status} tickets…</p>}
          <ul className="rows">
            {log.map((entry) => (
              <li key={entry.key} data-testid="live-event" data-kind={entry.kind}>
                {entry.kind} “{entry.title}” {entry.previousStatus ? `${entry.previousStatus} → ` : ""}
                {entry.status}
              </li>
            ))}
          </ul>
        </aside>
      </div>
    </>
  );
}
