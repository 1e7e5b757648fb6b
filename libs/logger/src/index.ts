export { createLogger, type LogFormat, type Logger, type LoggerOptions, type LogLevel } from './logger';
export { currentRequestId, requestIdFrom, runOutsideRequest, runWithRequestId } from './request-context';
export { requestLogging, type RequestLoggingOptions } from './request-logging';
export { loggingConfigSchema } from './logging-config';
