"""CART trees, random forests, extra trees and bagging on the shared grower."""
