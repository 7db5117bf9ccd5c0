import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Language, Parser, type Node } from "web-tree-sitter";

/**
 * A small reader of Bicep parse trees for the infra tests. There is no Bicep CLI on our machines, so the templates are
 * parsed with `tree-sitter-bicep` (its wasm, through `web-tree-sitter`) and checked structurally here: node types come
 * from node_modules/tree-sitter-bicep/grammar.js (`resource_declaration`, `object_property`, `call_expression`, …).
 */

/** Repository root (this file is test/infra/bicep.ts). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..");
/** The deployable templates. */
export const INFRA_DIR = path.join(REPO_ROOT, "infra");
/** Deliberately bad templates that the checks must reject. */
export const FIXTURES_DIR = path.join(__dirname, "fixtures");

const GRAMMAR_WASM = path.join(REPO_ROOT, "node_modules", "tree-sitter-bicep", "tree-sitter-bicep.wasm");

let parserPromise: Promise<Parser> | undefined;

/** One shared parser: loading the wasm takes a while and the parser is reusable. */
function getParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    const language = await Language.load(GRAMMAR_WASM);
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  return parserPromise;
}

/** A parsed template. */
export interface BicepFile {
  /** Path relative to the repository root, for messages. */
  readonly name: string;
  readonly source: string;
  readonly root: Node;
}

/** Parses Bicep source text. */
export async function parseBicep(source: string, name = "<inline>"): Promise<BicepFile> {
  const parser = await getParser();
  const tree = parser.parse(source);
  if (tree === null) throw new Error(`tree-sitter returned no tree for ${name}`);
  return { name, source, root: tree.rootNode };
}

/** Reads and parses a template file. */
export async function parseBicepFile(file: string): Promise<BicepFile> {
  return parseBicep(readFileSync(file, "utf8"), path.relative(REPO_ROOT, file));
}

/**
 * Parses a `.bicepparam` file. The grammar knows `using` but requires a type in `param` declarations, which
 * parameter files do not have, so each leading `param` keyword is read as `var ` (same length, so positions in
 * messages stay right): the values are then ordinary Bicep expressions.
 */
export async function parseBicepParamFile(file: string): Promise<BicepFile> {
  const source = readFileSync(file, "utf8").replace(/^(\s*)param(?=\s)/gm, "$1var  ");
  return parseBicep(source, path.relative(REPO_ROOT, file));
}

/** Every file under `dir` (recursively) whose name ends with `extension`, sorted. */
export function listFiles(dir: string, extension: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/** A syntax error: an ERROR node (unexpected text) or a MISSING node (expected text absent). */
export interface SyntaxProblem {
  readonly kind: "ERROR" | "MISSING";
  /** 1-based line and column. */
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/** Every ERROR and MISSING node of a tree, in source order. */
export function syntaxProblems(root: Node): SyntaxProblem[] {
  const problems: SyntaxProblem[] = [];
  const visit = (node: Node): void => {
    if (node.isError || node.isMissing) {
      problems.push({
        kind: node.isMissing ? "MISSING" : "ERROR",
        line: node.startPosition.row + 1,
        column: node.startPosition.column + 1,
        text: node.isMissing ? node.type : node.text.slice(0, 60),
      });
    }
    if (node.hasError) for (const child of node.children) visit(child);
  };
  visit(root);
  return problems;
}

/** All nodes of the given type(s) under `node`, the node itself included, in source order. */
export function descendants(node: Node, types: string | readonly string[]): Node[] {
  const wanted = typeof types === "string" ? [types] : types;
  const found: Node[] = [];
  const visit = (current: Node): void => {
    if (wanted.includes(current.type)) found.push(current);
    for (const child of current.namedChildren) visit(child);
  };
  visit(node);
  return found;
}

/**
 * The value of a string literal without interpolation (`'abc'`, `'''abc'''`), with Bicep's escapes resolved;
 * `undefined` for anything else, including `'a${b}'`.
 */
export function stringLiteral(node: Node | null | undefined): string | undefined {
  if (node?.type !== "string") return undefined;
  if (node.namedChildren.some((child) => child.type === "interpolation")) return undefined;
  const text = node.text;
  if (text.startsWith("'''")) return text.slice(3, -3);
  return unescapeBicep(text.slice(1, -1));
}

const ESCAPES: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", "\\": "\\", "'": "'", $: "$" };

/** Resolves Bicep's escapes (`\n`, `\'`, `\$`, …) in the text between the quotes of a string literal. */
export function unescapeBicep(raw: string): string {
  return raw.replace(/\\(.)/g, (_match, escaped: string) => ESCAPES[escaped] ?? escaped);
}

/** The key of an `object_property` (identifier or quoted string), or `undefined` for a nested resource. */
export function propertyKey(property: Node): string | undefined {
  const keyNode = property.namedChildren[0];
  if (keyNode === undefined) return undefined;
  if (keyNode.type === "identifier") return keyNode.text;
  return stringLiteral(keyNode);
}

/** The value node of an `object_property`: its last named child that is not a comment. */
function propertyValue(property: Node): Node | undefined {
  const values = property.namedChildren.filter((child) => child.type !== "comment");
  return values.length >= 2 ? values[values.length - 1] : undefined;
}

/** The entries of an `object` node, in source order (comments and decorators skipped). */
export function objectEntries(object: Node): { key: string; value: Node; property: Node }[] {
  const entries: { key: string; value: Node; property: Node }[] = [];
  for (const property of object.namedChildren) {
    if (property.type !== "object_property") continue;
    const key = propertyKey(property);
    const value = propertyValue(property);
    if (key !== undefined && value !== undefined) entries.push({ key, value, property });
  }
  return entries;
}

/** The value at `keys` inside nested object literals, or `undefined` if a step is missing or not an object. */
export function valueAt(object: Node | undefined, ...keys: string[]): Node | undefined {
  let current = object;
  for (const key of keys) {
    if (current?.type !== "object") return undefined;
    current = objectEntries(current).find((entry) => entry.key === key)?.value;
  }
  return current;
}

/**
 * The object literal that configures a resource or module declaration: the body directly, the object of
 * `if (…) { … }`, or the body of `[for … : { … }]`.
 */
export function declarationBody(declaration: Node): Node | undefined {
  const last = declaration.namedChildren.filter((child) => child.type !== "comment").at(-1);
  if (last === undefined) return undefined;
  if (last.type === "object") return last;
  if (last.type === "if_statement") return last.namedChildren.find((child) => child.type === "object");
  if (last.type === "for_statement") {
    const body = last.childForFieldName("body");
    if (body?.type === "object") return body;
    if (body?.type === "if_statement") return body.namedChildren.find((child) => child.type === "object");
  }
  return undefined;
}

/** A `resource` declaration. */
export interface ResourceDeclaration {
  /** Symbolic name (`resource <symbol> '…'`). */
  readonly symbol: string;
  /** Resource type without the version, e.g. `Microsoft.Storage/storageAccounts`. */
  readonly type: string;
  /** API version after `@`, e.g. `2024-01-01`. */
  readonly apiVersion: string;
  /** `existing` references deploy nothing. */
  readonly existing: boolean;
  readonly body: Node | undefined;
  readonly node: Node;
}

/** Every `resource` declaration of a file, nested ones included. */
export function resourceDeclarations(file: BicepFile): ResourceDeclaration[] {
  return descendants(file.root, "resource_declaration").map((node) => {
    const symbol = node.namedChildren.find((child) => child.type === "identifier")?.text ?? "";
    const typeString = stringLiteral(node.namedChildren.find((child) => child.type === "string")) ?? "";
    const at = typeString.lastIndexOf("@");
    return {
      symbol,
      type: at < 0 ? typeString : typeString.slice(0, at),
      apiVersion: at < 0 ? "" : typeString.slice(at + 1),
      existing: node.children.some((child) => child.type === "existing"),
      body: declarationBody(node),
      node,
    };
  });
}

/** A `module` declaration. */
export interface ModuleDeclaration {
  readonly symbol: string;
  /** The module path as written, e.g. `modules/storageAccount.bicep`. */
  readonly path: string;
  readonly body: Node | undefined;
}

/** Every `module` declaration of a file. */
export function moduleDeclarations(file: BicepFile): ModuleDeclaration[] {
  return descendants(file.root, "module_declaration").map((node) => ({
    symbol: node.namedChildren.find((child) => child.type === "identifier")?.text ?? "",
    path: stringLiteral(node.namedChildren.find((child) => child.type === "string")) ?? "",
    body: declarationBody(node),
  }));
}

/** A `param` declaration: its type as written, its default value, if any, and its decorators. */
export interface ParameterDeclaration {
  readonly name: string;
  readonly type: string;
  readonly defaultValue: Node | undefined;
  /** Decorator name (`allowed`, `minLength`, `description`, …) → its argument expressions. */
  readonly decorators: ReadonlyMap<string, Node[]>;
}

/** The `param` declarations of a file, by name. */
export function parameterDeclarations(file: BicepFile): Map<string, ParameterDeclaration> {
  const declarations = new Map<string, ParameterDeclaration>();
  for (const node of descendants(file.root, "parameter_declaration")) {
    const [nameNode, typeNode, defaultValue] = node.namedChildren.filter((child) => child.type !== "comment");
    if (nameNode === undefined || typeNode === undefined) continue;
    declarations.set(nameNode.text, {
      name: nameNode.text,
      type: typeNode.text,
      defaultValue,
      decorators: decoratorsOf(node),
    });
  }
  return declarations;
}

/** The decorators written above a declaration (the grammar keeps them in a `decorators` node just before it). */
function decoratorsOf(declaration: Node): Map<string, Node[]> {
  let previous = declaration.previousNamedSibling;
  while (previous?.type === "comment") previous = previous.previousNamedSibling;
  const decorators = new Map<string, Node[]>();
  if (previous?.type !== "decorators") return decorators;
  for (const call of descendants(previous, "call_expression").filter(
    (candidate) => candidate.parent?.type === "decorator",
  )) {
    decorators.set(calledFunctionName(call), callArguments(call));
  }
  return decorators;
}

/** The `var` declarations of a file: name → value expression. */
export function variableDeclarations(file: BicepFile): Map<string, Node> {
  const declarations = new Map<string, Node>();
  for (const node of descendants(file.root, "variable_declaration")) {
    const [nameNode, value] = node.namedChildren.filter((child) => child.type !== "comment");
    if (nameNode !== undefined && value !== undefined) declarations.set(nameNode.text, value);
  }
  return declarations;
}

/**
 * The name of the function a `call_expression` calls: `listKeys` for both `listKeys(id, v)` and
 * `account.listKeys()`, `az.listKeys` style namespaces included.
 */
export function calledFunctionName(call: Node): string {
  const callee = call.childForFieldName("function");
  if (callee === null) return "";
  if (callee.type === "member_expression") return callee.childForFieldName("property")?.text ?? "";
  return callee.text;
}

/** The argument expressions of a `call_expression`. */
export function callArguments(call: Node): Node[] {
  const args = call.childForFieldName("arguments");
  return args === null ? [] : args.namedChildren.filter((child) => child.type !== "comment");
}

/** The comments on the same line as `node` (trailing comments such as `'…' // Storage Blob Data Owner`). */
export function commentsOnLine(file: BicepFile, node: Node): string[] {
  const row = node.startPosition.row;
  return descendants(file.root, "comment")
    .filter((comment) => comment.startPosition.row === row)
    .map((comment) => comment.text);
}
