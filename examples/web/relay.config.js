// relay-compiler configuration (https://relay.dev/docs/getting-started/compiler-config/).
// CommonJS on purpose: relay-compiler 21 reads an ESM `export default` config as
// `{ __esModule, default }` and refuses it.
module.exports = {
  src: "./src",
  schema: "../../schema.graphql",
  language: "typescript",
  eagerEsModules: true,
  excludes: ["**/node_modules/**", "**/__mocks__/**", "**/__generated__/**"],
  customScalarTypes: {
    Cents: "string",
  },
};
