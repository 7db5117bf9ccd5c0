// The CommonJS build's `moduleFile.ts` (tshy's dialect switching; see that file): this module's own file.
export const MODULE_FILE: string = __filename;
