// The plan preview's old path, kept only for src/cli (another branch's files at the time of the move): its home is
// src/rules/preview.ts. Remove once src/cli imports src/rules directly.
export { previewPlan } from '../rules/preview.js';
export type { OpenApiSchema, PlanPreview, PreviewSnapshot } from '../rules/preview.js';
