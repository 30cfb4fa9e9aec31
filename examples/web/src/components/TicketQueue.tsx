import { graphql, usePaginationFragment } from "react-relay";
import type { TicketQueue_organization$key } from "./__generated__/TicketQueue_organization.graphql";
import { TicketRow } from "./TicketRow";

const PAGE = 10;

/** One status queue of an organization, newest first, paged forward with "load more". */
export function TicketQueue(props: { organization: TicketQueue_organization$key }) {
  const { data, hasNext, isLoadingNext, loadNext } = usePaginationFragment(
    graphql`
      fragment TicketQueue_organization on Organization
      @refetchable(queryName: "TicketQueuePaginationQuery")
      @argumentDefinitions(
        status: { type: "TicketStatus!" }
        count: { type: "Int", defaultValue: 10 }
        cursor: { type: "String" }
      ) {
        tickets(status: $status, first: $count, after: $cursor)
          @connection(key: "TicketQueue_tickets") {
          totalCount
          edges {
            node {
              id
              ...TicketRow_ticket
            }
          }
        }
      }
    `,
    props.organization,
  );
  const { edges, totalCount } = data.tickets;
  return (
    <section data-testid="ticket-queue">
      <p className="muted" data-testid="queue-count">
        Showing {edges.length} of {totalCount}
      </p>
      <ul className="rows">
        {edges.map((edge) => (
          <TicketRow key={edge.node.id} ticket={edge.node} />
        ))}
      </ul>
      {hasNext && (
        <button
          data-testid="queue-load-more"
          disabled={isLoadingNext}
          onClick={() => loadNext(PAGE)}
        >
          {isLoadingNext ? "Loading…" : "Load more"}
        </button>
      )}
    </section>
  );
}
