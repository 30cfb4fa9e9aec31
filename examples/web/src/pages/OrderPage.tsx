import { useState, useTransition } from "react";
import { graphql, useLazyLoadQuery, useMutation } from "react-relay";
import { ErrorMessage } from "../components/ErrorMessage";
import { toProblem, type Problem } from "../errors";
import { formatCents, formatDate } from "../format";
import type { OrderPageQuery, OrderStatus } from "./__generated__/OrderPageQuery.graphql";
import type { OrderPageStatusMutation } from "./__generated__/OrderPageStatusMutation.graphql";

/** The moves the order life cycle allows; the server refuses others with INVALID_TRANSITION. */
const NEXT: Partial<Record<OrderStatus, OrderStatus[]>> = {
  PLACED: ["PAID", "CANCELLED"],
  PAID: ["SHIPPED", "CANCELLED"],
  SHIPPED: ["DELIVERED"],
};

export default function OrderPage({ id }: { id: string }) {
  const [fetchKey, setFetchKey] = useState(0);
  const [isReloading, startTransition] = useTransition();
  const { order } = useLazyLoadQuery<OrderPageQuery>(
    graphql`
      query OrderPageQuery($id: ID!) {
        order(id: $id) {
          id
          orderId
          status
          placedAt
          currency
          totalCents
          version
          buyer {
            username
            name
            email
          }
          lines {
            lineNo
            sku
            description
            quantity
            unitPriceCents
            amountCents
          }
        }
      }
    `,
    { id },
    { fetchKey, fetchPolicy: fetchKey ? "network-only" : "store-or-network" },
  );
  const [problem, setProblem] = useState<Problem | null>(null);
  const [commit, isInFlight] = useMutation<OrderPageStatusMutation>(graphql`
    mutation OrderPageStatusMutation($input: UpdateOrderStatusInput!) {
      updateOrderStatus(input: $input) {
        order {
          id
          status
          version
        }
      }
    }
  `);
  if (!order) return <p data-testid="not-found">No such order.</p>;

  const move = (status: OrderStatus) => {
    setProblem(null);
    commit({
      variables: { input: { orderId: order.id, status, expectedVersion: order.version } },
      onError: (error) => setProblem(toProblem(error)),
    });
  };

  return (
    <>
      <h1>
        Order <span data-testid="order-id">{order.orderId}</span>
      </h1>
      <p>
        <span className="badge" data-testid="order-status">
          {order.status}
        </span>{" "}
        <span className="muted">
          version <span data-testid="order-version">{order.version}</span> · placed{" "}
          {formatDate(order.placedAt)} by {order.buyer.name} (@{order.buyer.username},{" "}
          {order.buyer.email})
        </span>
      </p>
      <table data-testid="order-lines">
        <thead>
          <tr>
            <th>#</th>
            <th>SKU</th>
            <th>Description</th>
            <th>Qty</th>
            <th>Unit price</th>
            <th>Amount</th>
          </tr>
        </thead>
        <tbody>
          {order.lines.map((line) => (
            <tr key={line.lineNo} data-testid="order-line">
              <td>{line.lineNo}</td>
              <td>{line.sku}</td>
              <td>{line.description}</td>
              <td>{line.quantity}</td>
              <td>{formatCents(line.unitPriceCents, order.currency)}</td>
              <td>{formatCents(line.amountCents, order.currency)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <td colSpan={5}>Total</td>
            <td data-testid="order-total">{formatCents(order.totalCents, order.currency)}</td>
          </tr>
        </tfoot>
      </table>
      <p>
        {(NEXT[order.status] ?? []).map((status) => (
          <button key={status} data-testid={`order-set-${status}`} disabled={isInFlight} onClick={() => move(status)}>
            Mark {status.toLowerCase()}
          </button>
        ))}
        {!NEXT[order.status] && <span className="muted">This order is {order.status.toLowerCase()}: no further moves.</span>}
      </p>
      {problem && (
        <ErrorMessage problem={problem}>
          {problem.code === "VERSION_MISMATCH" && (
            <button
              data-testid="order-reload"
              onClick={() =>
                startTransition(() => {
                  setProblem(null);
                  setFetchKey((k) => k + 1);
                })
              }
            >
              {isReloading ? "Reloading…" : "Reload"}
            </button>
          )}
        </ErrorMessage>
      )}
    </>
  );
}
