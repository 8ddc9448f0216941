import express, { type RequestHandler, type Router } from "express";

export interface OperationRoute {
  /** The Express path of the operation (`/v1/personas/:persona_id`). */
  path: string;
  /** Adds the operation's route to `router`. */
  add: (router: Router) => void;
}

const dynamic = /[:*(]/;

/** The first two segments of a path, lower-cased (routes match case-insensitively). */
function keyOf(path: string): string {
  const second = path.indexOf("/", 1);
  if (second < 0) return `${path.slice(1).toLowerCase()}/`;
  const third = path.indexOf("/", second + 1);
  return path.slice(1, third < 0 ? undefined : third).toLowerCase();
}

/**
 * The operations' routes, split by their first two path segments into one Express router each, so
 * that a request is matched only against the routes that share its prefix (a handful) instead of
 * walking the 128 routes in order: the walk was the largest single cost of a small request in the
 * profile. Each router holds its routes in the given order, with every route whose first two
 * segments hold a parameter, so matching and its precedence are Express's own. A request whose
 * path has no router of its own (an unknown route, or a URL not in origin form) goes through one
 * with every route, as before. No router is mounted at a path, so req.url, req.path and
 * req.baseUrl are what they were.
 */
export function operationRouter(given: OperationRoute[]): RequestHandler {
  const options = { caseSensitive: false, strict: false };
  const routes = claimingPaths(given);
  const everything = express.Router(options);
  for (const route of routes) route.add(everything);
  const keys = new Set<string>();
  for (const route of routes) {
    const [first = "", second = ""] = route.path.split("/").slice(1, 3);
    if (!dynamic.test(first) && !dynamic.test(second)) keys.add(keyOf(route.path));
  }
  const byKey = new Map<string, Router>();
  for (const key of keys) {
    const router = express.Router(options);
    for (const route of routes) {
      const [first = "", second = ""] = route.path.split("/").slice(1, 3);
      if (dynamic.test(first) || dynamic.test(second) || keyOf(route.path) === key) route.add(router);
    }
    byKey.set(key, router);
  }
  return (req, res, next) => {
    // The contract has no OPTIONS operation, and an Express router answers OPTIONS by itself with
    // an Allow list of the methods its routes take: such a request goes on to the unknown route.
    if (req.method === "OPTIONS") return next();
    const url = req.url;
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const router = path.startsWith("/") ? (byKey.get(keyOf(path)) ?? everything) : everything;
    router(req, res, next);
  };
}

/**
 * The routes, each path's together, with after each path's operations a route that claims the path
 * for every other method and answers it as unknown (404). Without it `DELETE /v1/personas/import`,
 * a path whose only operation is a POST, went on to `DELETE /v1/personas/:persona_id` and was
 * refused for its id ("must match format uuid"): the contract's path is the one that matches first,
 * as its validator had it, and a method that path does not have is unknown.
 */
function claimingPaths(routes: OperationRoute[]): OperationRoute[] {
  const byPath = new Map<string, OperationRoute[]>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  const unknownMethod: RequestHandler = (_req, _res, next) => next("router");
  return [...byPath].flatMap(([path, own]) => [...own, { path, add: (router: Router) => void router.all(path, unknownMethod) }]);
}
