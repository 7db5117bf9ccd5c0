import type { Node } from "web-tree-sitter";
import {
  type BicepFile,
  callArguments,
  calledFunctionName,
  descendants,
  objectEntries,
  parameterDeclarations,
  unescapeBicep,
  variableDeclarations,
} from "./bicep";

/** A value of the small expression subset {@link evaluate} understands. */
export type BicepValue = string | number | boolean | null | BicepValue[] | { [key: string]: BicepValue };

/**
 * Functions an expression may call beyond the built-ins below: deployment-time functions a test binds to a stand-in
 * (`resourceGroup`, `uniqueString`) and the template's own `func` declarations ({@link userFunctions}).
 */
export type BicepFunctions = Readonly<Record<string, (args: BicepValue[]) => BicepValue>>;

/**
 * Evaluates a constant expression: literals, arrays, objects, member and index access, interpolated strings, the
 * operators, `?:`, and the Bicep functions the templates use for names (`string`, `toLower`, `replace`, `take`,
 * `length`, `range`, `substring`, `contains`, `empty`, `join`, and `map`/`filter` with a lambda), plus `functions`.
 * Identifiers are looked up in `scope` (e.g. parameters with their defaults). Anything else throws, naming what it
 * could not evaluate, so a test never silently compares against a guess.
 */
export function evaluate(
  node: Node,
  scope: ReadonlyMap<string, BicepValue>,
  functions: BicepFunctions = {},
): BicepValue {
  const recurse = (child: Node, inner: ReadonlyMap<string, BicepValue> = scope): BicepValue =>
    evaluate(child, inner, functions);
  switch (node.type) {
    case "number":
      return Number(node.text);
    case "boolean":
      return node.text === "true";
    case "null":
      return null;
    case "identifier": {
      const value = scope.get(node.text);
      if (value === undefined) throw new Error(`cannot evaluate '${node.text}': not bound`);
      return value;
    }
    case "string": {
      let text = "";
      for (const child of node.namedChildren) {
        if (child.type === "interpolation") {
          const inner = child.namedChildren[0];
          if (inner === undefined) throw new Error(`empty interpolation in ${node.text}`);
          text += bicepString(recurse(inner));
        } else if (child.type === "string_content" || child.type === "escape_sequence") {
          text += unescapeBicep(child.text);
        }
      }
      return text;
    }
    case "array":
      return node.namedChildren.filter((child) => child.type !== "comment").map((child) => recurse(child));
    case "object":
      return Object.fromEntries(objectEntries(node).map(({ key, value }) => [key, recurse(value)]));
    case "parenthesized_expression": {
      const [inner, ...rest] = node.namedChildren;
      if (inner !== undefined && rest.length === 0) return recurse(inner);
      break;
    }
    case "member_expression": {
      const object = node.childForFieldName("object");
      const property = node.childForFieldName("property")?.text;
      if (object === null || property === undefined) break;
      const value = recurse(object);
      if (isRecord(value) && property in value) {
        const member = value[property];
        if (member !== undefined) return member;
      }
      throw new Error(`cannot evaluate '${node.text}': no property ${property}`);
    }
    case "subscript_expression": {
      const object = node.childForFieldName("object");
      const index = node.childForFieldName("index");
      if (object === null || index === null) break;
      const value = recurse(object);
      const key = recurse(index);
      const member =
        Array.isArray(value) && typeof key === "number"
          ? value[key]
          : isRecord(value) && typeof key === "string"
            ? value[key]
            : undefined;
      if (member === undefined) throw new Error(`cannot evaluate '${node.text}': no element ${JSON.stringify(key)}`);
      return member;
    }
    case "ternary_expression": {
      const [condition, consequence, alternative] = ["condition", "consequence", "alternative"].map((field) =>
        node.childForFieldName(field),
      );
      if (!condition || !consequence || !alternative) break;
      return truthy(recurse(condition), node) ? recurse(consequence) : recurse(alternative);
    }
    case "unary_expression": {
      const operator = node.childForFieldName("operator")?.text;
      const argument = node.childForFieldName("argument");
      if (argument === null) break;
      const value = recurse(argument);
      if (operator === "!") return !truthy(value, node);
      if (operator === "-" && typeof value === "number") return -value;
      break;
    }
    case "binary_expression":
      return binary(node, recurse);
    case "call_expression":
      return call(node, scope, functions);
  }
  throw new Error(`cannot evaluate ${node.type} '${node.text}'`);
}

/** The `func` declarations of a file, as functions {@link evaluate} can call (they may call each other). */
export function userFunctions(file: BicepFile, outer: BicepFunctions = {}): BicepFunctions {
  // One object the bodies close over, so a function may call one declared after it.
  const all: Record<string, (args: BicepValue[]) => BicepValue> = { ...outer };
  for (const node of descendants(file.root, "user_defined_function")) {
    const name = node.childForFieldName("name")?.text;
    const parameters = node.namedChildren.find((child) => child.type === "parameters")?.namedChildren ?? [];
    const names = parameters.map((parameter) => parameter.namedChildren[0]?.text ?? "");
    const body = node.namedChildren.filter((child) => child.type !== "comment").at(-1);
    if (name === undefined || body === undefined) continue;
    all[name] = (args) => evaluate(body, new Map(names.map((parameter, i) => [parameter, args[i] ?? null])), all);
  }
  return all;
}

function isRecord(value: BicepValue): value is { [key: string]: BicepValue } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function truthy(value: BicepValue, node: Node): boolean {
  if (typeof value !== "boolean")
    throw new Error(`cannot evaluate '${node.text}': ${JSON.stringify(value)} is not a bool`);
  return value;
}

function binary(node: Node, recurse: (child: Node) => BicepValue): BicepValue {
  const operator = node.childForFieldName("operator")?.text;
  const leftNode = node.childForFieldName("left");
  const rightNode = node.childForFieldName("right");
  if (leftNode === null || rightNode === null) throw new Error(`cannot evaluate '${node.text}'`);
  if (operator === "&&") return truthy(recurse(leftNode), node) && truthy(recurse(rightNode), node);
  if (operator === "||") return truthy(recurse(leftNode), node) || truthy(recurse(rightNode), node);
  const left = recurse(leftNode);
  const right = recurse(rightNode);
  if (operator === "==") return JSON.stringify(left) === JSON.stringify(right);
  if (operator === "!=") return JSON.stringify(left) !== JSON.stringify(right);
  if (operator === "??") return left ?? right;
  if (typeof left === "number" && typeof right === "number") {
    switch (operator) {
      case "+":
        return left + right;
      case "-":
        return left - right;
      case "*":
        return left * right;
      case ">":
        return left > right;
      case ">=":
        return left >= right;
      case "<":
        return left < right;
      case "<=":
        return left <= right;
    }
  }
  throw new Error(
    `cannot evaluate '${node.text}': operator ${operator ?? "?"} on ${JSON.stringify(left)} and ${JSON.stringify(right)}`,
  );
}

/** A lambda argument (`x => …` or `(x, i) => …`) as a function of its arguments. */
function lambda(
  node: Node | undefined,
  scope: ReadonlyMap<string, BicepValue>,
  functions: BicepFunctions,
): (...args: BicepValue[]) => BicepValue {
  const [head, body] = node?.type === "lambda_expression" ? node.namedChildren : [];
  if (head === undefined || body === undefined) throw new Error(`expected a lambda, got '${node?.text ?? "nothing"}'`);
  const names = head.type === "parenthesized_expression" ? head.namedChildren.map((child) => child.text) : [head.text];
  return (...args) =>
    evaluate(
      body,
      new Map([...scope, ...names.map((name, i): [string, BicepValue] => [name, args[i] ?? null])]),
      functions,
    );
}

function call(node: Node, scope: ReadonlyMap<string, BicepValue>, functions: BicepFunctions): BicepValue {
  const name = calledFunctionName(node);
  const argNodes = callArguments(node);
  if (name === "map" || name === "filter") {
    const [arrayNode, lambdaNode] = argNodes;
    const array = arrayNode === undefined ? undefined : evaluate(arrayNode, scope, functions);
    if (!Array.isArray(array)) throw new Error(`cannot evaluate '${node.text}': not an array`);
    const apply = lambda(lambdaNode, scope, functions);
    return name === "map"
      ? array.map((item, i) => apply(item, i))
      : array.filter((item, i) => truthy(apply(item, i), node));
  }
  const args = argNodes.map((arg) => evaluate(arg, scope, functions));
  const custom = functions[name];
  if (custom !== undefined) return custom(args);
  const [a, b, c] = args;
  switch (name) {
    case "string":
      if (args.length === 1 && a !== undefined) return bicepString(a);
      break;
    case "toLower":
      if (typeof a === "string") return a.toLowerCase();
      break;
    case "toUpper":
      if (typeof a === "string") return a.toUpperCase();
      break;
    case "replace":
      if (typeof a === "string" && typeof b === "string" && typeof c === "string") return a.split(b).join(c);
      break;
    case "take":
      if ((typeof a === "string" || Array.isArray(a)) && typeof b === "number") return a.slice(0, Math.max(0, b));
      break;
    case "length":
      if (typeof a === "string" || Array.isArray(a)) return a.length;
      if (a !== undefined && isRecord(a)) return Object.keys(a).length;
      break;
    case "empty":
      if (a === null) return true;
      if (typeof a === "string" || Array.isArray(a)) return a.length === 0;
      if (a !== undefined && isRecord(a)) return Object.keys(a).length === 0;
      break;
    case "range":
      if (typeof a === "number" && typeof b === "number")
        return Array.from({ length: Math.max(0, b) }, (_, i) => a + i);
      break;
    case "substring":
      if (typeof a === "string" && typeof b === "number" && (c === undefined || typeof c === "number")) {
        if (b < 0 || b > a.length || (c !== undefined && (c < 0 || b + c > a.length)))
          throw new Error(`'${node.text}': index out of range`);
        return a.substring(b, c === undefined ? undefined : b + c);
      }
      break;
    case "contains":
      if (typeof a === "string" && typeof b === "string") return a.includes(b);
      if (Array.isArray(a) && b !== undefined) return a.some((item) => JSON.stringify(item) === JSON.stringify(b));
      break;
    case "join":
      if (Array.isArray(a) && typeof b === "string") return a.map(bicepString).join(b);
      break;
  }
  throw new Error(
    `cannot evaluate '${node.text}': ${name}(${args.map((arg) => JSON.stringify(arg)).join(", ")}) is not supported here`,
  );
}

/** How Bicep turns a value into text in `string(x)` and `'${x}'`: strings as they are, anything else as JSON. */
function bicepString(value: BicepValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * A template's parameters bound to their defaults (after `overrides`), then its variables, each as far as it is a
 * constant: a deployment-time default (`resourceGroup().location`) or a variable that refers to a resource is left out.
 */
export function templateScope(file: BicepFile, overrides: Record<string, BicepValue> = {}): Map<string, BicepValue> {
  const scope = new Map<string, BicepValue>(Object.entries(overrides));
  const bind = (name: string, value: Node): void => {
    try {
      scope.set(name, evaluate(value, scope));
    } catch {
      // not a constant
    }
  };
  for (const [name, declaration] of parameterDeclarations(file))
    if (!scope.has(name) && declaration.defaultValue !== undefined) bind(name, declaration.defaultValue);
  for (const [name, value] of variableDeclarations(file)) bind(name, value);
  return scope;
}
