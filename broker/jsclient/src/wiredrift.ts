// A compile-time check, as drift.ts does for the /local messages, that
// wire's hand-written envelope types and the ones generated from the
// contract's JSON Schema (generated/call.ts, generated/answer.ts) accept
// the same values, both ways. tsc fails the build, and with it the dist
// rebuild test, when one side changes without the other. Nothing here is
// exported or run.
import type { AnswerEnvelope } from "./generated/answer.js";
import type { CallEnvelope } from "./generated/call.js";
import type { Answer, Call, Rule } from "./wire.js";

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : { wider: A }) : { narrower: A };

const checks: { call: Same<Call, CallEnvelope>; answer: Same<Answer, AnswerEnvelope>; rule: Same<Rule, AnswerEnvelope & { ok: false } extends { refused: infer R } ? R : never> } = {
  call: true,
  answer: true,
  rule: true,
};
void checks;
