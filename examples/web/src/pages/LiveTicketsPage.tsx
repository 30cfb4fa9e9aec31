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
    { fetchPolicy: "store-and-network" },
  );
  const connectionId = organization?.tickets.__id;

  const config = useMemo<GraphQLSubscriptionConfig<LiveTicketsPageSubscription>>(
    () => ({
      subscription: graphql`
        subscription LiveTicketsPageSubscription($org: String!, $status: TicketStatus) {
          ticketEvents(org: $org, status: $status) {
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
      variables: { org, status },
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
      onError: (error) => setProblem(toProblem(error)),
    }),
    [org, status, connectionId],
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
              })
            }
          >
            {s}
          </button>
        ))}
      </div>
      {problem && <ErrorMessage problem={problem} testId="live-error" />}
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
