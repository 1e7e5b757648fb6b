/**
 * Embeds a value in a script inside HTML: a JSON string literal in which nothing can end the
 * script element or the string (`<`, `>`, `&`, U+2028, U+2029 become \u escapes).
 */
export function scriptLiteral(value: string): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The methods the stub queues until the SDK loads (docs/tracking-api.md#sdk-and-snippet: not setConsent,
 * getConsent, debugState). */
export const queuedMethods = [
  'track',
  'identify',
  'page',
  'group',
  'alias',
  'reset',
  'flush',
  'ready',
] as const;
export const afterLoadMethods = ['setConsent', 'getConsent', 'debugState'] as const;

/**
 * A ready-to-paste script block: defines `window.analytics` as a stub that queues calls made
 * before the SDK loads (each with the time it was made, `t`), loads `<host>/v1/sdk.js`, and
 * sends the first page view. The SDK (libs/sdk) replays the queue in order. `ready` returns a
 * promise on the stub too, resolved by the SDK once loaded. setConsent, getConsent and
 * debugState exist only after load; on the stub they warn and do nothing.
 */
export function renderSnippet(writeKey: string, host: string): string {
  return `<script>
!function(){var a=window.analytics=window.analytics||[];if(a.initialize||a.invoked)return;a.invoked=!0;
a.methods=${JSON.stringify(queuedMethods)};
a.factory=function(m){return function(){var args=Array.prototype.slice.call(arguments);args.unshift(m);args.t=+new Date;a.push(args);return a}};
for(var i=0;i<a.methods.length;i++){a[a.methods[i]]=a.factory(a.methods[i])}
if(typeof Promise=="function")a.ready=function(c){return new Promise(function(r){a.push(["ready",function(){r();if(typeof c=="function")c()}])})};
${JSON.stringify(afterLoadMethods)}.forEach(function(m){a[m]=function(){if(window.console)console.warn("analytics."+m+" is available only after the SDK has loaded")}});
a.writeKey=${scriptLiteral(writeKey)};a.host=${scriptLiteral(host)};
var s=document.createElement("script");s.async=!0;s.src=a.host+"/v1/sdk.js";
var f=document.getElementsByTagName("script")[0];f.parentNode.insertBefore(s,f);
a.page()}();
</script>
`;
}
