import { describe, expect, it } from "vitest";
import { parseSkillFile } from "../src/compile/parse.js";
import { validateSkill } from "../src/compile/validate.js";
import { skillMd } from "./helpers.js";

const validate = (text: string, folder: string) => validateSkill(`${folder}/SKILL.md`, folder, parseSkillFile(`${folder}/SKILL.md`, new TextEncoder().encode(text), false)).findings;

describe("validateSkill", () => {
  it("compares the name with its folder's in NFC: an NFD folder (as macOS writes names) matches", () => {
    // Not a valid name (name-invalid, a warning), but kept: what a team writes in its own language.
    const mismatches = (name: string, folder: string) => validate(skillMd(name), folder).filter((finding) => finding.code === "name-mismatch");
    const nfc = "caf\u00e9";
    const nfd = "cafe\u0301";
    expect(mismatches(nfc, nfd)).toEqual([]);
    expect(mismatches(nfd, nfc)).toEqual([]);
    expect(mismatches(nfc, "cafe")).toMatchObject([{ message: `name "${nfc}" does not match its folder "cafe"` }]);
  });
});
