import type { ReactNode } from "react";
import type { Problem } from "../errors";

/** A failure as a person reads it, with the server's code for whoever reports it. */
export function ErrorMessage(props: { problem: Problem; testId?: string; children?: ReactNode }) {
  const { problem, testId = "error-message", children } = props;
  return (
    <div role="alert" className="error" data-testid={testId} data-code={problem.code}>
      {problem.text} <code>{problem.code}</code> {children}
    </div>
  );
}

/** The part of a failure that belongs beside one input (`extensions.field`). */
export function FieldError({ problem, field }: { problem: Problem | null; field: string }) {
  if (problem?.field !== field) return null;
  return (
    <span role="alert" className="field-error" data-testid={`field-error-${field}`} data-code={problem.code}>
      {problem.text}
    </span>
  );
}
