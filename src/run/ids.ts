// Run, trace and checkpoint ids.
import { nanoid } from 'nanoid';

/**
 * A new 21-character URL-safe id. nanoid appends one character at a time, which V8 keeps as a chain
 * of string pieces (~330 B) until something flattens it; reading a character flattens it (~40 B),
 * which matters with thousands of runs in flight.
 */
export function newId(): string {
  const id = nanoid();
  id.charCodeAt(0);
  return id;
}
