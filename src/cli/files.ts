// The file helpers live in src/files.ts (shared with the cdk8s synthesis, which may not import src/cli).
export { yamlFilesIn } from '../files.js';
