export { createLogger, type LogFormat, type Logger, type LoggerOptions, type LogLevel } from './logger';
export { currentRequestId, requestIdFrom, runWithRequestId } from './request-context';
export { requestLogging } from './request-logging';
export { loggingConfigSchema } from './logging-config';
