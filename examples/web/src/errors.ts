/** One entry of a response's `errors`, as itemgraph sends it. */
export type ServerError = {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: {
    code?: string;
    /** The input field the error is about (`CONFLICT`, `NOT_FOUND`, `BAD_USER_INPUT`). */
    field?: string;
    /** Sending the same request again may succeed. */
    retryable?: boolean;
    /** `VERSION_MISMATCH`: the version the entity is at now. */
    currentVersion?: number;
    [key: string]: unknown;
  };
};

/** A response with no `data`: the network layer throws it, Relay hands it to `onError`. */
export class ServerErrors extends Error {
  constructor(readonly errors: ReadonlyArray<ServerError>) {
    super(errors.map((e) => e.message).join("; "));
    this.name = "ServerErrors";
  }
}

export type Problem = {
  code: string;
  /** What a person should read. */
  text: string;
  field?: string;
  currentVersion?: number;
};

const FIELD_LABELS: Record<string, string> = {
  assignedTickets: "assigned tickets",
};

/** The first error of a failure, worded for a person. */
export function toProblem(error: unknown): Problem {
  if (!(error instanceof ServerErrors) || error.errors.length === 0) {
    const message = error instanceof Error ? error.message : String(error);
    return { code: "NETWORK", text: `Could not reach the server (${message}).` };
  }
  const { message, extensions = {} } = error.errors[0];
  const code = extensions.code ?? "UNKNOWN";
  const field = extensions.field;
  const label = field ? (FIELD_LABELS[field] ?? field) : "";
  const problem = { code, field, currentVersion: extensions.currentVersion };
  switch (code) {
    case "CONFLICT":
      return {
        ...problem,
        text: ["slug", "username", "email"].includes(field ?? "")
          ? `This ${label} is already taken.`
          : `Still referenced by ${label}: ${message}.`,
      };
    case "NOT_FOUND":
      return { ...problem, text: field ? `No such ${label}.` : message };
    case "VERSION_MISMATCH":
      return {
        ...problem,
        text: `Someone changed this since you loaded it (it is at version ${extensions.currentVersion} now). Reload, check, and save again.`,
      };
    case "UNAUTHENTICATED":
      return { ...problem, text: "Your token is missing, invalid or expired: sign in again." };
    case "FORBIDDEN":
      return { ...problem, text: "Your role may not do this." };
    case "UNAVAILABLE":
    case "THROTTLED":
    case "CONTENTION":
      return { ...problem, text: `The server is busy and retries did not help (${message}). Try again shortly.` };
    default:
      return { ...problem, text: message };
  }
}
