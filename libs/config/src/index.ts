export { ConfigError, loadConfig, loadConfigOrExit, type Env } from './config-loader';
export { envBool, envEnum, envInt, envList, envPort, envString, envUrl } from './env-fields';
export { vendorBaseUrlFields, vendorBaseUrlsOf } from './vendor-base-urls';
export { exitUnlessNodeSupported, nodeRuntimeProblem } from './node-runtime';
