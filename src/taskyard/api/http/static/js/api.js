// The API client: the signed-in token, JSON requests, one error type.
const KEY = "taskyard.token";

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

export const session = {
  token: localStorage.getItem(KEY) || sessionStorage.getItem(KEY) || "",
  who: null,
  // Kept for this tab only unless "remember" is ticked (it is not by default): a token
  // in localStorage outlives the tab, readable by any script of this origin.
  save(token, remember) {
    this.token = token;
    (remember ? sessionStorage : localStorage).removeItem(KEY);
    (remember ? localStorage : sessionStorage).setItem(KEY, token);
  },
  clear() {
    this.token = ""; this.who = null;
    localStorage.removeItem(KEY); sessionStorage.removeItem(KEY);
  },
  canWrite() { return this.who && (this.who.scope === "write" || this.who.scope === "admin"); },
};

let onUnauthorized = () => {};
export function whenUnauthorized(fn) { onUnauthorized = fn; }

export async function api(path, { method = "GET", body, params, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  const headers = { Authorization: `Bearer ${session.token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = data?.error?.message || `${response.status} ${response.statusText}`;
    if (response.status === 401) onUnauthorized(message);
    throw new ApiError(response.status, message);
  }
  return data;
}

// Every page of a cursor-paged list (used for graphs small enough to draw).
export async function allPages(path, params, max = 100) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < max; i++) {
    const page = await api(path, { params: { ...params, cursor } });
    items.push(...page.items);
    if (!page.next) break;
    cursor = page.next;
  }
  return items;
}
