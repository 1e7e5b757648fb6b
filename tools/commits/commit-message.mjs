// The shape every commit message after BASELINE keeps (CONTRIBUTING.md, "Commit messages"): a
// subject `<area>: <what changed>` of at most 72 characters, a blank line, then a body. Pure, so
// that its test needs no repository.

/** The last commit before the rule: older subjects ran to 800 characters, with no bodies. */
export const BASELINE = 'efecdc5de72cd25293a81837db078876656bc6e7';

export const MAX_SUBJECT = 72;

// A lowercase area (a project, a folder, a few of them with commas), a colon, a space, then text.
const SUBJECT = /^[a-z0-9][a-z0-9./,_ -]*: \S/;

/**
 * What is wrong with a commit message, as git stores it (`git log --format=%B`); empty when
 * nothing is.
 */
export function messageProblems(message) {
  const lines = message.replace(/\s+$/, '').split('\n');
  const subject = lines[0] ?? '';
  const problems = [];
  if (!SUBJECT.test(subject))
    problems.push('the subject is not `<area>: <what changed>` with a lowercase area');
  // Characters as a reader counts them: an em dash or an accent is one.
  const length = [...subject].length;
  if (length > MAX_SUBJECT) problems.push(`the subject has ${length} characters, more than ${MAX_SUBJECT}`);
  // Trailing blank lines are gone, so a third line, when there is one, holds text.
  if (lines.length < 2) {
    problems.push('there is no body: a blank line after the subject, then why and what was measured');
  } else if (lines[1].trim() !== '') {
    problems.push('the second line is not blank: a subject is one line, the body follows a blank line');
  }
  return problems;
}
