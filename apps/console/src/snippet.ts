// The browser snippet, as the ingestion service's GET /v1/snippet renders it
// (apps/ingestion/src/sdk/snippet.ts; the console's browser test checks they are the same).
// The console cannot fetch it: its Content-Security-Policy allows connections to its own
// origin only, and the write key's secret cannot be read back from the API anyway.

function scriptLiteral(value: string): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const queuedMethods = ['track', 'identify', 'page', 'group', 'alias', 'reset', 'flush', 'ready'];
const afterLoadMethods = ['setConsent', 'getConsent', 'debugState'];

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

/** Where ingestion answers, as a guess: the console's host on port 3001 (the local stack). */
export function defaultIngestionHost(): string {
  return `${location.protocol}//${location.hostname}:3001`;
}
