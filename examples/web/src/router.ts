import { useEffect, useState } from "react";

/** The hash route as path segments: `#/orders/01H…` is `["orders", "01H…"]`. */
export function useRoute(): string[] {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onChange = () => setHash(window.location.hash);
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
}

export const href = (...segments: string[]) => "#/" + segments.map(encodeURIComponent).join("/");

export const navigate = (...segments: string[]) => {
  window.location.hash = href(...segments);
};
