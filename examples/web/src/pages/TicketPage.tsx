import { useState, useTransition, type FormEvent } from "react";
import { graphql, useLazyLoadQuery, useMutation } from "react-relay";
import { ErrorMessage, FieldError } from "../components/ErrorMessage";
import { toProblem, type Problem } from "../errors";
import { formatDate } from "../format";
import { href } from "../router";
import type { TicketPageQuery } from "./__generated__/TicketPageQuery.graphql";
import type {
  TicketPageUpdateMutation,
  TicketPriority,
  TicketStatus,
} from "./__generated__/TicketPageUpdateMutation.graphql";

const STATUSES: readonly TicketStatus[] = ["OPEN", "PENDING", "SOLVED", "CLOSED"];
const PRIORITIES: readonly TicketPriority[] = ["LOW", "NORMAL", "HIGH", "URGENT"];

/** One ticket, changed with an optimistic update guarded by its `version`. */
export default function TicketPage({ id }: { id: string }) {
  // Bumping the key refetches from the server: the "reload" after VERSION_MISMATCH.
  const [fetchKey, setFetchKey] = useState(0);
  const [isReloading, startTransition] = useTransition();
  const { ticket } = useLazyLoadQuery<TicketPageQuery>(
    graphql`
      query TicketPageQuery($id: ID!) {
        ticket(id: $id) {
          id
          ticketId
          title
          body
          status
          priority
          version
          createdAt
          updatedAt
          requester {
            username
            name
          }
          assignee {
            username
            name
          }
        }
      }
    `,
    { id },
    { fetchKey, fetchPolicy: fetchKey ? "network-only" : "store-or-network" },
  );
  const [title, setTitle] = useState(ticket?.title ?? "");
  const [status, setStatus] = useState(ticket?.status ?? "OPEN");
  const [priority, setPriority] = useState(ticket?.priority ?? "NORMAL");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [saved, setSaved] = useState(false);
  const [commit, isInFlight] = useMutation<TicketPageUpdateMutation>(graphql`
    mutation TicketPageUpdateMutation($input: UpdateTicketInput!) {
      updateTicket(input: $input) {
        ticket {
          id
          title
          status
          priority
          version
          updatedAt
        }
      }
    }
  `);
  if (!ticket) return <p data-testid="not-found">No such ticket.</p>;

  const save = (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    setSaved(false);
    commit({
      variables: {
        input: { ticketId: ticket.id, expectedVersion: ticket.version, title, status, priority },
      },
      // Shown at once, rolled back by Relay if the server refuses.
      optimisticResponse: {
        updateTicket: {
          ticket: {
            id: ticket.id,
            title,
            status,
            priority,
            version: ticket.version + 1,
            updatedAt: new Date().toISOString(),
          },
        },
      },
      onCompleted: () => setSaved(true),
      onError: (error) => setProblem(toProblem(error)),
    });
  };

  return (
    <>
      <h1 data-testid="ticket-title">{ticket.title}</h1>
      <p className="muted">
        <span className={`badge ${ticket.status}`} data-testid="ticket-status">
          {ticket.status}
        </span>{" "}
        <span data-testid="ticket-priority">{ticket.priority}</span> · version{" "}
        <span data-testid="ticket-version">{ticket.version}</span> · raised by{" "}
        <a href={href("users", ticket.requester.username)}>{ticket.requester.name}</a> on{" "}
        {formatDate(ticket.createdAt)} · {ticket.assignee ? `assigned to ${ticket.assignee.name}` : "unassigned"}
        {isInFlight && <span data-testid="ticket-saving"> · saving…</span>}
      </p>
      <pre className="body">{ticket.body}</pre>

      <form onSubmit={save} data-testid="ticket-form">
        <label>
          Title <input data-testid="ticket-title-input" value={title} onChange={(e) => setTitle(e.target.value)} />
          <FieldError problem={problem} field="title" />
        </label>
        <label>
          Status{" "}
          <select data-testid="ticket-status-select" value={status} onChange={(e) => setStatus(e.target.value as TicketStatus)}>
            {STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Priority{" "}
          <select data-testid="ticket-priority-select" value={priority} onChange={(e) => setPriority(e.target.value as TicketPriority)}>
            {PRIORITIES.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
        <button data-testid="ticket-save" disabled={isInFlight}>
          Save
        </button>
      </form>
      {saved && <p data-testid="ticket-saved">Saved.</p>}
      {problem && problem.field !== "title" && (
        <ErrorMessage problem={problem}>
          {problem.code === "VERSION_MISMATCH" && (
            <button
              data-testid="ticket-reload"
              onClick={() => {
                startTransition(() => {
                  setProblem(null);
                  setFetchKey((k) => k + 1);
                });
              }}
            >
              {isReloading ? "Reloading…" : "Reload"}
            </button>
          )}
        </ErrorMessage>
      )}
    </>
  );
}
