export { AppError, isAppError, notFound } from './app-error';
