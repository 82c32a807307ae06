// Command tool drives the shop.
package main

import "example.com/shop/kit"

func main() { kit.Kit{}.Run() }
