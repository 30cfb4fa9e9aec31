import { Component, type ReactNode } from "react";
import { toProblem } from "../errors";
import { ErrorMessage } from "./ErrorMessage";

type Props = { children: ReactNode; onSignOut: () => void };

/** Shows what a query thrown by `useLazyLoadQuery` failed with. */
export class ErrorBoundary extends Component<Props, { error: unknown }> {
  state = { error: undefined as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  render() {
    if (this.state.error === undefined) return this.props.children;
    const problem = toProblem(this.state.error);
    return (
      <ErrorMessage problem={problem} testId="page-error">
        {problem.code === "UNAUTHENTICATED" ? (
          <button data-testid="page-error-sign-out" onClick={this.props.onSignOut}>
            Sign in again
          </button>
        ) : (
          <button data-testid="page-error-retry" onClick={() => this.setState({ error: undefined })}>
            Try again
          </button>
        )}
      </ErrorMessage>
    );
  }
}
