export interface Options {
  limit: number;
}

export type Id = string;

enum Color { Red, Green }

export class Store<T> {
  private items: T[] = [];

  add(item: T): void {
    this.items.push(item);
  }
}

namespace Util {
  export function clamp(x: number): number {
    return x;
  }
}
