// Types of bin/lib/build-cli.mjs (plain JavaScript so that bin/inplace.mjs can load it without tsx).

/** Where the bundle lives, relative to the project root. */
export declare const BUNDLE_DIR: string;
/** Newest modification time (ms) of the sources the bundle is built from; 0 when there are no sources. */
export declare function newestSource(root: string): number;
/** True when dist/cli/main.js exists and no source is newer. */
export declare function bundleIsFresh(root: string): boolean;
/** Builds the bundle into dist/cli/ (swapped in whole). */
export declare function buildCli(root: string): Promise<void>;
