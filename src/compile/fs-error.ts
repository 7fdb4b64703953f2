import { escapeInvisible } from "./terminal.js";

/**
 * Filesystem failures as one line for people: `cannot <what was being done>: <why>`. Node's errors carry a
 * code, a syscall and a path; their own message ("EACCES: permission denied, open '…'") and stack are not for
 * the user of a CLI.
 */

/** What Node's system errors carry: `NodeJS.ErrnoException`, spelled out so the package's declarations need no @types/node. */
export interface SystemError extends Error {
  code?: string;
  syscall?: string;
  path?: string;
  errno?: number;
}

/** A filesystem operation failed (permissions, a read-only or full disk, a path that cannot be): the CLI exits 2. */
export class FileSystemError extends Error {
  override name = "FileSystemError";
  constructor(
    /** What was being done, as in "cannot <action>": `write /app/dist/skills`. */
    readonly action: string,
    override readonly cause: SystemError,
  ) {
    const detail = cause.path !== undefined && !action.endsWith(cause.path) ? ` (${cause.syscall ?? "at"} ${cause.path})` : "";
    // The paths may be under a folder a pull request fills (a committed bundle's): a line break or escape in a name stays text.
    super(escapeInvisible(`cannot ${action}: ${systemErrorReason(cause)}${detail}`));
  }
}

/** An error the operating system reported (it has an `E…` code and the call that failed), not a bug. */
export function isSystemError(error: unknown): error is SystemError & { code: string; syscall: string } {
  const { code, syscall } = (error ?? {}) as SystemError;
  return typeof code === "string" && /^E[A-Z]+$/.test(code) && typeof syscall === "string";
}

/** A system error as a FileSystemError, with what was being done; anything else unchanged. */
export function asFileSystemError(error: unknown, action: string): unknown {
  return isSystemError(error) ? new FileSystemError(action, error) : error;
}

/** A system error that no caller described: the call and its path stand for what was being done. */
export function describeSystemError(error: SystemError & { syscall: string }): string {
  return new FileSystemError(`${error.syscall}${error.path === undefined ? "" : ` ${error.path}`}`, error).message;
}

const REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "the file system is read-only",
  ENOSPC: "no space left on the device",
  EDQUOT: "the disk quota is used up",
  ENOTDIR: "a part of the path is a file, not a folder",
  EISDIR: "it is a folder, not a file",
  ENOENT: "it does not exist",
  EEXIST: "it already exists",
  ENAMETOOLONG: "the path, or a name in it, is too long",
  ELOOP: "too many symbolic links",
  EBUSY: "it is busy (a mount point, or in use)",
  EMFILE: "too many open files",
  ENFILE: "too many open files",
  EIO: "an input/output error",
  EXDEV: "it is on another device",
};

/** Why a system call failed, in words. */
export function systemErrorReason(error: SystemError): string {
  // `mkdir -p` through a file: Node reports the file as existing.
  if (error.code === "EEXIST" && error.syscall === "mkdir") return "a part of the path is a file, not a folder";
  return (error.code !== undefined ? REASONS[error.code] : undefined) ?? error.code ?? error.message;
}
