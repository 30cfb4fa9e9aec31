import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// 127.0.0.1:5173, the origin the README gives the server's --cors-origin.
const origin = { host: "127.0.0.1", port: 5173, strictPort: true };

export default defineConfig({
  // babel-plugin-relay turns each graphql`…` literal into an import of the artifact
  // relay-compiler wrote into the __generated__ directory beside it.
  plugins: [react({ babel: { plugins: ["relay"] } })],
  server: origin,
  preview: origin,
});
