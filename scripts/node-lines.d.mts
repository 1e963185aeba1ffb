/** Each supported Node.js line and the release of it that is tested. */
export declare const NODE_LINES: { readonly 20: string; readonly 22: string; readonly 24: string };
export type NodeLine = keyof typeof NODE_LINES;
/** The running node's line (its major version). */
export declare function runningLine(): number;
/** A node binary of `line`, fetched from the registry the first time it is needed. */
export declare function nodeBinary(line: NodeLine): string;
